#!/usr/bin/env bash
# Removal benchmark: manyfiles rm vs rmz and rm -rf on two workloads.
#
#   bench/rm.sh
#
# Everything happens on ext4 in a RAM-backed image (/dev/shm → loop → mkfs.ext4 with
# inode tables initialised up front → mount), so only the file system's and the tools'
# own costs are measured. Workloads (a fresh file system each):
#   tree   FILES (default 100,000) files of SIZE (default 1k) in DIRS (default 100) directories
#   flat   FLAT_FILES (default 1,000,000) empty files in one directory
# Before every timed removal the tree is generated afresh with `manyfiles gen` (untimed),
# then `sync` and drop caches (dentries, inodes, pages), so every tool starts cold.
#
# Environment: ROUNDS (measured rounds, default 5), WARMUP (default 1), WORKLOADS
# (default "tree flat"), FILES, SIZE, DIRS, FLAT_FILES, THREADS (manyfiles --threads,
# default nproc), IMG_SIZE (default 4G, sparse; the flat workload's FLAT_IMG_SIZE default
# 8G: gen's space check counts a block per file), RAW (also copy the raw TSV here),
# QUIET_WAIT (seconds to wait for a quiet machine before starting, default 900).
#
# Every round runs each contender once, in an order rotated by one each round:
#   mf-rm    manyfiles rm DIR --threads T -q
#   rmz      rmz DIR
#   rm-rf    rm -rf DIR
# Each run is checked: exit 0 and DIR gone. Wall time from bash's EPOCHREALTIME; user/sys
# CPU and peak RSS from /usr/bin/time. The load average and the number of rustc
# processes at each run's start are recorded: this machine is shared. Before the first
# round the script waits (polling every 30 s, up to QUIET_WAIT) until no rustc runs and
# the 1-minute load is below 1.0.
# Needs root (mount, losetup, drop_caches), cargo, python3, rmz (cargo install rmz
# --locked), /usr/bin/time.
set -euo pipefail
shopt -s inherit_errexit

ROUNDS=${ROUNDS:-5}
WARMUP=${WARMUP:-1}
WORKLOADS=${WORKLOADS:-tree flat}
FILES=${FILES:-100000}
SIZE=${SIZE:-1k}
DIRS=${DIRS:-100}
FLAT_FILES=${FLAT_FILES:-1000000}
THREADS=${THREADS:-$(nproc)}
IMG_SIZE=${IMG_SIZE:-4G}
FLAT_IMG_SIZE=${FLAT_IMG_SIZE:-8G}
RAW=${RAW:-}
QUIET_WAIT=${QUIET_WAIT:-900}
RMZ=${RMZ:-$(command -v rmz || echo "$HOME/.cargo/bin/rmz")}

for tool in python3 /usr/bin/time mkfs.ext4 losetup "$RMZ"; do
    command -v "$tool" >/dev/null || { echo "bench/rm.sh needs $tool (rmz: cargo install rmz --locked)" >&2; exit 2; }
done
if [ $((FILES % DIRS)) -ne 0 ]; then echo "FILES must be a multiple of DIRS" >&2; exit 2; fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=/dev/shm/manyfiles-rmbench-$$
TSV=$WORK/raw.tsv
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_setup

bench_build

bench_header "rm benchmark" \
    "ROUNDS=$ROUNDS WARMUP=$WARMUP WORKLOADS='$WORKLOADS' FILES=$FILES SIZE=$SIZE DIRS=$DIRS FLAT_FILES=$FLAT_FILES THREADS=$THREADS bench/rm.sh" \
    "$("$RMZ" --version | head -1); $(rm --version | head -1)"

# A quiet machine before the recorded rounds (other builds would skew every tool).
waited=0
while [ "$(pgrep -c rustc || true)" -gt 0 ] || ! awk '{exit !($1 < 1.0)}' /proc/loadavg; do
    if [ "$waited" -ge "$QUIET_WAIT" ]; then
        echo "machine still busy after ${QUIET_WAIT}s ($(cut -d' ' -f1-3 /proc/loadavg), $(pgrep -c rustc || true) rustc): running anyway" >&2
        break
    fi
    echo "waiting for a quiet machine: load $(cut -d' ' -f1 /proc/loadavg), $(pgrep -c rustc || true) rustc" >&2
    sleep 30
    waited=$((waited + 30))
done
echo "- load at start: $(cut -d' ' -f1-3 /proc/loadavg) (waited ${waited}s for a quiet machine)"
echo

# gen_tree WORKLOAD DIR: the workload's tree, untimed.
gen_tree() {
    case "$1" in
        tree) "$MF" gen "$2" --files "$FILES" --size "$SIZE" --fanout "$DIRS" --files-per-dir $((FILES / DIRS)) -q >/dev/null ;;
        flat) "$MF" gen "$2" --files "$FLAT_FILES" --size 0 --flat -q >/dev/null ;;
    esac
}

run_one() {
    local w=$1 c=$2 dir=$MNT/victim
    if [ -e "$dir" ]; then rm -rf "$dir"; fi
    gen_tree "$w" "$dir"
    sync
    echo 3 > /proc/sys/vm/drop_caches
    local load rustc
    load=$(cut -d' ' -f1 /proc/loadavg)
    rustc=$(pgrep -c rustc || true)
    case "$c" in
        mf-rm) timed "$MF" rm "$dir" --threads "$THREADS" -q ;;
        rmz) timed "$RMZ" "$dir" ;;
        rm-rf) timed rm -rf "$dir" ;;
    esac
    if [ -e "$dir" ]; then echo "$c left $dir behind" >&2; exit 1; fi
    echo "$(cat "$WORK/last") $load $rustc"
}

CONTENDERS=(mf-rm rmz rm-rf)
: > "$TSV"
for w in $WORKLOADS; do
    case "$w" in
        tree) fresh_ext4 "$IMG_SIZE" -N $((FILES + DIRS + 100000)) ;;
        flat) fresh_ext4 "$FLAT_IMG_SIZE" -N $((FLAT_FILES + 100000)) ;;
        *) echo "unknown workload $w (tree, flat)" >&2; exit 2 ;;
    esac
    for ((r = 0; r < WARMUP + ROUNDS; r++)); do
        k=${#CONTENDERS[@]}
        for ((i = 0; i < k; i++)); do
            c=${CONTENDERS[$(((i + r) % k))]}
            line=$(run_one "$w" "$c")
            if [ "$r" -ge "$WARMUP" ]; then
                printf '%s\t%s\t%s\t%s\n' "$w" "$((r - WARMUP + 1))" "$c" "$line" | tr ' ' '\t' >> "$TSV"
            fi
            echo "  $w round $((r + 1))$([ "$r" -lt "$WARMUP" ] && echo ' (warm-up)') $c: $line" >&2
        done
    done
done

if [ -n "$RAW" ]; then cp "$TSV" "$RAW"; fi

python3 - "$TSV" "$FILES" "$SIZE" "$DIRS" "$FLAT_FILES" <<'EOF'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
files, size, dirs, flat = sys.argv[2:6]
names = {"tree": f"{int(files):,} files of {size} in {int(dirs):,} directories",
         "flat": f"{int(flat):,} empty files in one directory"}
targets = {"rmz": 1.1, "rm-rf": 2.5}
print("| workload | contender | median s | min–max s | user+sys s (median) | peak RSS MiB | load at start | rustc at start | manyfiles × faster (median) | per-round × | target | result |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for w in dict.fromkeys(r[0] for r in rows):
    by = {}
    for r in rows:
        if r[0] == w:
            by.setdefault(r[2], []).append((int(r[1]), float(r[3]), float(r[4]), float(r[5]), int(r[6]), float(r[7]), int(r[8])))
    med = {c: st.median(x[1] for x in v) for c, v in by.items()}
    for c, v in by.items():
        cells = [names.get(w, w), c, f"{med[c]:.3f}", f"{min(x[1] for x in v):.3f}–{max(x[1] for x in v):.3f}",
                 f"{st.median(x[2] + x[3] for x in v):.2f}", f"{max(x[4] for x in v) / 1024:.1f}",
                 f"{min(x[5] for x in v):.2f}–{max(x[5] for x in v):.2f}", f"{max(x[6] for x in v)}"]
        if c in targets and "mf-rm" in med:
            mine = {x[0]: x[1] for x in by["mf-rm"]}
            q = [x[1] / mine[x[0]] for x in v if x[0] in mine]
            x = med[c] / med["mf-rm"]
            cells += [f"**{x:.2f}**", f"{min(q):.2f}–{max(q):.2f}", f"≥ {targets[c]}", "PASS" if x >= targets[c] else "**MISS**"]
        else:
            cells += ["", "", "", ""]
        print("| " + " | ".join(cells) + " |")
print()
print("Raw seconds per round (load average at start in brackets):")
print()
for w in dict.fromkeys(r[0] for r in rows):
    k = max(int(r[1]) for r in rows if r[0] == w)
    print(f"| {w} | " + " | ".join(f"r{i}" for i in range(1, k + 1)) + " |")
    print("|---|" + "---:|" * k)
    for c in dict.fromkeys(r[2] for r in rows if r[0] == w):
        print(f"| {c} | " + " | ".join(f"{float(r[3]):.3f} [{float(r[7]):.2f}]" for r in rows if r[0] == w and r[2] == c) + " |")
    print()
EOF
