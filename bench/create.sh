#!/usr/bin/env bash
# Create benchmark: manyfiles vs a minimal C open/write/close loop (bench/create_loop.c).
#
#   bench/create.sh [FS...]        FS: ext4-ram (default), tmpfs (default), disk
#
#   ext4-ram  ext4 on a loop device whose image lives in /dev/shm (RAM): no disk noise,
#             only the file system's own cost
#   tmpfs     /dev/shm itself
#   disk      a directory under $DISK_DIR (default /tmp) on whatever backs it
#
# Environment: ROUNDS (measured rounds, default 7, at least 5), WARMUP (unrecorded
# rounds first, default 1), FILES (default 100000), SIZE (bytes, default 1024),
# IMG_SIZE (ext4 image, default 4G), DROP_CACHES=1 (drop the page/dentry/inode caches
# before every timed run, besides the sync that always happens), RAW (also copy the
# raw per-run figures, TSV, to this path), QUIET_CORES / QUIET_MAX (before every timed
# run, wait up to QUIET_MAX s, default 120, until other processes use fewer than
# QUIET_CORES cores, default 0.15: the machine may be shared), DISTURBED (a run during
# which other processes used more than this many cores on average, default 0.25, is
# counted as disturbed in the table; it is still included in the medians).
#
# Every round runs each contender once, in an order rotated by one each round:
#   c-1t        create_loop DIR N SIZE                 (1 thread, one directory)
#   mf-1t       manyfiles ops --flat --threads 1       (1 thread, one directory)
#   mf-2t-100d  manyfiles ops --threads 2 --fanout 100 --files-per-dir N/100
#   c-2t-100d   create_loop DIR N SIZE 2 100           (the C reference of the same)
# The C loop's files are removed between runs (untimed); manyfiles removes its own
# (its delete phase, not reported here). `sync` precedes every timed run.
# Prints the machine, the raw figures and a Markdown table of medians and ratios.
# Needs root (mount, losetup), cc, cargo, python3, /usr/bin/time.
set -euo pipefail
shopt -s inherit_errexit

ROUNDS=${ROUNDS:-7}
WARMUP=${WARMUP:-1}
FILES=${FILES:-100000}
SIZE=${SIZE:-1024}
IMG_SIZE=${IMG_SIZE:-4G}
DROP_CACHES=${DROP_CACHES:-0}
DISK_DIR=${DISK_DIR:-/tmp}
QUIET_CORES=${QUIET_CORES:-0.15}
QUIET_MAX=${QUIET_MAX:-120}
DISTURBED=${DISTURBED:-0.25}
RAW=${RAW:-}

if [ "$#" -eq 0 ]; then set -- ext4-ram tmpfs; fi
for fs in "$@"; do
    case "$fs" in ext4-ram|tmpfs|disk) ;; *) echo "unknown file system '$fs' (ext4-ram, tmpfs, disk)" >&2; exit 2 ;; esac
done
if [ "$ROUNDS" -lt 5 ]; then echo "ROUNDS must be at least 5" >&2; exit 2; fi
if [ $((FILES % 100)) -ne 0 ]; then echo "FILES must be a multiple of 100" >&2; exit 2; fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=/dev/shm/manyfiles-bench-$$        # everything in RAM: binaries' outputs, image, tmpfs runs
TSV=$WORK/raw.tsv
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_setup

# --- build -----------------------------------------------------------------------
bench_build
CLOOP=$WORK/create_loop
cc -O2 -pthread -o "$CLOOP" "$ROOT/bench/create_loop.c"

# --- machine ---------------------------------------------------------------------
bench_header "create benchmark" "ROUNDS=$ROUNDS WARMUP=$WARMUP FILES=$FILES SIZE=$SIZE bench/create.sh $*" \
    "cc: $(cc --version | head -1)"

# --- file systems ----------------------------------------------------------------
# Sets RUN_DIR to a fresh, empty directory on file system $1.
prepare() {
    case "$1" in
        ext4-ram)
            fresh_ext4 "$IMG_SIZE"
            mkdir "$MNT/runs"
            RUN_DIR=$MNT/runs
            ;;
        tmpfs)
            mkdir -p "$WORK/tmpfs-runs"
            RUN_DIR=$WORK/tmpfs-runs
            ;;
        disk)
            DISK_WORK=$(mktemp -d "$DISK_DIR/manyfiles-bench-$$.XXXXXX")
            RUN_DIR=$DISK_WORK
            ;;
    esac
}

HZ=$(getconf CLK_TCK)
# Busy and idle jiffies of all CPUs so far (steal counts as busy: someone else's time).
cpu_sample() {
    local _ u n s i w q sq st
    read -r _ u n s i w q sq st _ < /proc/stat
    echo "$((u + n + s + q + sq + st)) $((i + w))"
}

# This is a shared machine: before each timed run wait (up to QUIET_MAX seconds) until
# the CPUs were less than QUIET_CORES busy over one second. Writes the wait to $WORK/waited.
wait_quiet() {
    local t=0 b0 i0 b1 i1
    while :; do
        read -r b0 i0 < <(cpu_sample)
        sleep 1
        read -r b1 i1 < <(cpu_sample)
        if python3 -c "import sys; sys.exit(0 if ($b1 - $b0) / $HZ < $QUIET_CORES else 1)"; then break; fi
        t=$((t + 1))
        if [ "$t" -ge "$QUIET_MAX" ]; then echo "  (not quiet after ${QUIET_MAX}s, running anyway)" >&2; break; fi
        if [ $((t % 10)) -eq 1 ]; then echo "  (waiting for other load to stop...)" >&2; fi
    done
    echo "$t" > "$WORK/waited"
}

quiesce() {
    sync
    if [ "$DROP_CACHES" = 1 ]; then echo 3 > /proc/sys/vm/drop_caches; fi
    wait_quiet
}

# Write "pid jiffies" (user+sys so far) of every kernel thread (PF_KTHREAD) to $1:
# journal, writeback, loop device and RCU work that file system operations cause.
kthread_snapshot() {
    python3 -c '
import os, sys
with open(sys.argv[1], "w") as out:
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(f[6]) & 0x00200000:
            print(p, int(f[11]) + int(f[12]), file=out)' "$1"
}

# timed_watched CMD...: run CMD (its stdout passes through) and write to $WORK/other, over CMD's
# wall time, the average CPU cores used meanwhile by (1) other processes: system busy
# time (steal included) minus CMD's own user+sys time minus kernel threads, a
# disturbance indicator, ~0 when alone; (2) kernel threads (mostly work CMD causes;
# threads that exit meanwhile are missed).
timed_watched() {
    local b0 i0 b1 i1 t0 t1 u s
    kthread_snapshot "$WORK/k0"
    read -r b0 i0 < <(cpu_sample)
    t0=$EPOCHREALTIME
    /usr/bin/time -f '%U %S' -o "$WORK/time" "$@"
    t1=$EPOCHREALTIME
    read -r b1 i1 < <(cpu_sample)
    kthread_snapshot "$WORK/k1"
    read -r u s < "$WORK/time"
    python3 - "$WORK/k0" "$WORK/k1" > "$WORK/other" <<EOF
k0 = dict(l.split() for l in open("$WORK/k0"))
k = sum(max(0, int(v) - int(k0[p])) for p, v in (l.split() for l in open("$WORK/k1")) if p in k0) / $HZ
e = max($t1 - $t0, 0.01)
print(f"{max(0.0, (($b1 - $b0) / $HZ - $u - $s - k) / e):.2f}\t{k / e:.2f}")
EOF
}

# run_one FS DIR CONTENDER -> prints seconds
run_one() {
    local dir=$2 c=$3 out secs
    case "$c" in
        c-1t|c-2t-100d)
            out=$dir/c
            rm -rf "$out"
            mkdir "$out"
            quiesce
            if [ "$c" = c-1t ]; then
                secs=$(timed_watched "$CLOOP" "$out" "$FILES" "$SIZE")
            else
                secs=$(timed_watched "$CLOOP" "$out" "$FILES" "$SIZE" 2 100)
            fi
            rm -rf "$out"
            secs=$(printf '%s\t\t' "$secs")
            ;;
        mf-1t|mf-2t-100d)
            local json=$WORK/mf.json args
            rm -f "$json"
            if [ "$c" = mf-1t ]; then
                args=(--flat --threads 1)
            else
                args=(--threads 2 --fanout 100 --files-per-dir $((FILES / 100)))
            fi
            quiesce
            timed_watched "$MF" ops --target "$dir" --files "$FILES" --size "$SIZE" "${args[@]}" \
                --ops create,delete --runs 1 --quiet --json "$json" >/dev/null
            secs=$(python3 - "$json" "$FILES" "$c" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
m = [x for x in d["measurements"] if x["op"] == "create"]
assert len(m) == 1, "expected one create measurement"
m = m[0]
want_threads = 1 if sys.argv[3] == "mf-1t" else 2
if m["files"] != int(sys.argv[2]) or m.get("errors", 0) or m["threads"] != want_threads:
    sys.exit(f"manyfiles create: files={m['files']} errors={m.get('errors')} threads={m['threads']}")
print(f'{m["elapsed_s"]:.6f}\t{m.get("cpu_user_s", 0):.3f}\t{m.get("cpu_sys_s", 0):.3f}')
EOF
)
            ;;
    esac
    printf '%s\t%s\t%s\n' "$secs" "$(cat "$WORK/waited")" "$(cat "$WORK/other")"
}

CONTENDERS=(c-1t mf-1t mf-2t-100d c-2t-100d)
printf 'fs\tround\tcontender\tseconds\tuser_s\tsys_s\twaited_s\tother_cores\tkthread_cores\n' > "$TSV"
for fs in "$@"; do
    prepare "$fs"
    dir=$RUN_DIR
    echo "$fs: $(findmnt -n -o FSTYPE,SOURCE,OPTIONS --target "$dir" | head -1)" >&2
    total=$((WARMUP + ROUNDS))
    for ((r = 0; r < total; r++)); do
        for ((k = 0; k < ${#CONTENDERS[@]}; k++)); do
            c=${CONTENDERS[$(((k + r) % ${#CONTENDERS[@]}))]}
            res=$(run_one "$fs" "$dir" "$c")
            secs=${res%%$'\t'*}
            other=$(cut -f5 <<< "$res")
            if [ "$r" -lt "$WARMUP" ]; then
                echo "  $fs warmup $c ${secs}s (others used $other cores)" >&2
            else
                printf '%s\t%d\t%s\t%s\n' "$fs" $((r - WARMUP + 1)) "$c" "$res" >> "$TSV"
                echo "  $fs round $((r - WARMUP + 1))/$ROUNDS $c ${secs}s (others used $other cores)" >&2
            fi
        done
    done
    if [ "$fs" = disk ]; then rm -rf "$DISK_WORK"; DISK_WORK=""; fi
done

if [ -n "$RAW" ]; then cp "$TSV" "$RAW"; fi

python3 - "$TSV" "$FILES" "$DISTURBED" <<'EOF'
import csv, statistics, sys
from collections import defaultdict

files = int(sys.argv[2])
disturbed_at = float(sys.argv[3])
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
t = defaultdict(lambda: defaultdict(dict))   # fs -> contender -> round -> seconds
other = defaultdict(lambda: defaultdict(dict))
kth = defaultdict(lambda: defaultdict(dict))
for r in rows:
    t[r["fs"]][r["contender"]][int(r["round"])] = float(r["seconds"])
    other[r["fs"]][r["contender"]][int(r["round"])] = float(r["other_cores"] or 0)
    kth[r["fs"]][r["contender"]][int(r["round"])] = float(r["kthread_cores"] or 0)

names = {
    "c-1t": "C loop, 1 thread, 1 dir",
    "mf-1t": "manyfiles, 1 thread, 1 dir",
    "mf-2t-100d": "manyfiles, 2 threads, 100 dirs",
    "c-2t-100d": "C loop, 2 threads, 100 dirs",
}
targets = {"mf-1t": 0.95, "mf-2t-100d": 1.6, "c-2t-100d": None}
med = statistics.median

print("### raw seconds per round\n")
print("In brackets: CPU cores used on average during the run by other processes / by kernel threads "
      "(journal, writeback, loop device: mostly work the run itself causes).\n")
nr = max(len(v) for cs in t.values() for v in cs.values())
print("| file system | contender | " + " | ".join(f"r{i}" for i in range(1, nr + 1)) + " |")
print("|---|---|" + "---:|" * nr)
for fs, cs in t.items():
    for c in names:
        if c in cs:
            print(f"| {fs} | {c} | " + " | ".join(
                f"{cs[c][k]:.3f} [{other[fs][c][k]:.2f} / {kth[fs][c][k]:.2f}]" for k in sorted(cs[c])) + " |")
print()
print(f"### medians ({files:,} files; ratio = C-1T median time / contender median time, i.e. a rate ratio)\n")
print(f"A run counts as disturbed when other processes used more than {disturbed_at} cores on average during it.\n")
print("| file system | contender | runs (disturbed) | median s | min–max s | files/s (median) | × C-1T | per-round × C-1T min–max | target | result |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
for fs, cs in t.items():
    base = cs["c-1t"]
    mb = med(base.values())
    for c, label in names.items():
        if c not in cs:
            continue
        xs = cs[c]
        m = med(xs.values())
        nd = sum(1 for v in other[fs][c].values() if v > disturbed_at)
        tgt = targets.get(c)
        if c == "c-1t":
            rr, spread, tg, res = "1.000", "", "", "baseline"
        else:
            per_round = [base[k] / xs[k] for k in xs if k in base]
            rr = f"{mb / m:.3f}"
            spread = f"{min(per_round):.3f}–{max(per_round):.3f}"
            tg = f"≥ {tgt}" if tgt else "(reference)"
            res = ("PASS" if mb / m >= tgt else "MISS") if tgt else ""
        print(f"| {fs} | {label} | {len(xs)} ({nd}) | {m:.3f} | {min(xs.values()):.3f}–{max(xs.values()):.3f} "
              f"| {files / m:,.0f} | {rr} | {spread} | {tg} | {res} |")
EOF
