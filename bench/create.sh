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
# raw per-run figures, TSV, to this path).
#
# Every round runs each contender once, in an order rotated by one each round:
#   c-1t        create_loop DIR N SIZE                 (1 thread, one directory)
#   mf-1t       manyfiles ops --flat --threads 1       (1 thread, one directory)
#   mf-2t-100d  manyfiles ops --threads 2 --fanout 100 --files-per-dir N/100
#   c-2t-100d   create_loop DIR N SIZE 2 100           (the C reference of the same)
# The C loop's files are removed between runs (untimed); manyfiles removes its own
# (its delete phase, not reported here). `sync` precedes every timed run.
# Prints the machine, the raw figures and a Markdown table of medians and ratios.
# Needs root (mount, losetup), cc, cargo, python3.
set -euo pipefail

ROUNDS=${ROUNDS:-7}
WARMUP=${WARMUP:-1}
FILES=${FILES:-100000}
SIZE=${SIZE:-1024}
IMG_SIZE=${IMG_SIZE:-4G}
DROP_CACHES=${DROP_CACHES:-0}
DISK_DIR=${DISK_DIR:-/tmp}
RAW=${RAW:-}

if [ "$#" -eq 0 ]; then set -- ext4-ram tmpfs; fi
for fs in "$@"; do
    case "$fs" in ext4-ram|tmpfs|disk) ;; *) echo "unknown file system '$fs' (ext4-ram, tmpfs, disk)" >&2; exit 2 ;; esac
done
if [ "$ROUNDS" -lt 5 ]; then echo "ROUNDS must be at least 5" >&2; exit 2; fi
if [ $((FILES % 100)) -ne 0 ]; then echo "FILES must be a multiple of 100" >&2; exit 2; fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=/dev/shm/manyfiles-bench-$$        # everything in RAM: binaries' outputs, image, tmpfs runs
MNT=$WORK/mnt
IMG=$WORK/ext4.img
LOOP=""
DISK_WORK=""
TSV=$WORK/raw.tsv

cleanup() {
    local rc=$?
    set +e
    if mountpoint -q "$MNT" 2>/dev/null; then umount "$MNT" || umount -l "$MNT"; fi
    if [ -n "$LOOP" ]; then losetup -d "$LOOP" 2>/dev/null; fi
    if [ -n "$DISK_WORK" ]; then rm -rf "$DISK_WORK"; fi
    rm -rf "$WORK"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$WORK"

# --- build -----------------------------------------------------------------------
echo "building manyfiles (release) and the C loop..." >&2
(cd "$ROOT" && cargo build --release --quiet)
MF=$ROOT/target/release/manyfiles
CLOOP=$WORK/create_loop
cc -O2 -pthread -o "$CLOOP" "$ROOT/bench/create_loop.c"

# --- machine ---------------------------------------------------------------------
CPU=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
RAM=$(awk '/^MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)
echo "## create benchmark"
echo
echo "- command: \`ROUNDS=$ROUNDS WARMUP=$WARMUP FILES=$FILES SIZE=$SIZE bench/create.sh $*\`"
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- machine: $CPU, $(nproc) cores, $RAM RAM, kernel $(uname -r)"
echo "- manyfiles: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$ROOT" && git diff --quiet HEAD -- src 2>/dev/null || echo ' + uncommitted changes in src/'), cc: $(cc --version | head -1)"
echo

# --- file systems ----------------------------------------------------------------
# Prints the directory to run in for file system $1 (made fresh, empty).
prepare() {
    case "$1" in
        ext4-ram)
            if [ -n "$LOOP" ]; then umount "$MNT"; losetup -d "$LOOP"; LOOP=""; fi
            rm -f "$IMG"
            truncate -s "$IMG_SIZE" "$IMG"
            # initialise inode tables and journal now, so no ext4lazyinit runs during the runs
            mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$IMG"
            LOOP=$(losetup -f --show "$IMG")
            mkdir -p "$MNT"
            mount "$LOOP" "$MNT"
            mkdir "$MNT/runs"
            echo "$MNT/runs"
            ;;
        tmpfs)
            mkdir -p "$WORK/tmpfs-runs"
            echo "$WORK/tmpfs-runs"
            ;;
        disk)
            DISK_WORK=$(mktemp -d "$DISK_DIR/manyfiles-bench-$$.XXXXXX")
            echo "$DISK_WORK"
            ;;
    esac
}

quiesce() {
    sync
    if [ "$DROP_CACHES" = 1 ]; then echo 3 > /proc/sys/vm/drop_caches; fi
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
                secs=$("$CLOOP" "$out" "$FILES" "$SIZE")
            else
                secs=$("$CLOOP" "$out" "$FILES" "$SIZE" 2 100)
            fi
            rm -rf "$out"
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
            "$MF" ops --target "$dir" --files "$FILES" --size "$SIZE" "${args[@]}" \
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
    echo "$secs"
}

CONTENDERS=(c-1t mf-1t mf-2t-100d c-2t-100d)
printf 'fs\tround\tcontender\tseconds\tuser_s\tsys_s\n' > "$TSV"
for fs in "$@"; do
    dir=$(prepare "$fs")
    # prepare ran in a subshell: recover the loop device for cleanup
    if [ "$fs" = ext4-ram ]; then LOOP=$(findmnt -n -o SOURCE "$MNT"); fi
    if [ "$fs" = disk ]; then DISK_WORK=$dir; fi
    echo "$fs: $(findmnt -n -o FSTYPE,SOURCE,OPTIONS --target "$dir" | head -1)" >&2
    total=$((WARMUP + ROUNDS))
    for ((r = 0; r < total; r++)); do
        for ((k = 0; k < ${#CONTENDERS[@]}; k++)); do
            c=${CONTENDERS[$(((k + r) % ${#CONTENDERS[@]}))]}
            res=$(run_one "$fs" "$dir" "$c")
            secs=${res%%$'\t'*}
            if [ "$res" = "$secs" ]; then res=$'\t\t'; else res=${res#*$'\t'}; fi
            if [ "$r" -lt "$WARMUP" ]; then
                echo "  $fs warmup $c ${secs}s" >&2
            else
                printf '%s\t%d\t%s\t%s\t%s\n' "$fs" $((r - WARMUP + 1)) "$c" "$secs" "$res" >> "$TSV"
                echo "  $fs round $((r - WARMUP + 1))/$ROUNDS $c ${secs}s" >&2
            fi
        done
    done
    if [ "$fs" = disk ]; then rm -rf "$DISK_WORK"; DISK_WORK=""; fi
done

if [ -n "$RAW" ]; then cp "$TSV" "$RAW"; fi

python3 - "$TSV" "$FILES" <<'EOF'
import csv, statistics, sys
from collections import defaultdict

files = int(sys.argv[2])
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
t = defaultdict(lambda: defaultdict(dict))   # fs -> contender -> round -> seconds
for r in rows:
    t[r["fs"]][r["contender"]][int(r["round"])] = float(r["seconds"])

names = {
    "c-1t": "C loop, 1 thread, 1 dir",
    "mf-1t": "manyfiles, 1 thread, 1 dir",
    "mf-2t-100d": "manyfiles, 2 threads, 100 dirs",
    "c-2t-100d": "C loop, 2 threads, 100 dirs",
}
targets = {"mf-1t": 0.95, "mf-2t-100d": 1.6, "c-2t-100d": None}
med = lambda xs: statistics.median(xs)

print("### raw seconds per round\n")
print("| file system | contender | " + " | ".join(f"r{i}" for i in sorted(t[next(iter(t))]["c-1t"])) + " |")
print("|---|---|" + "---:|" * len(t[next(iter(t))]["c-1t"]))
for fs, cs in t.items():
    for c in names:
        if c in cs:
            print(f"| {fs} | {c} | " + " | ".join(f"{cs[c][k]:.3f}" for k in sorted(cs[c])) + " |")
print()
print(f"### medians ({files:,} files; rate ratio = C-1T median time / contender median time)\n")
print("| file system | contender | runs | median s | min–max s | files/s (median) | × C-1T | per-round × C-1T min–max | target | result |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
for fs, cs in t.items():
    base = cs["c-1t"]
    mb = med(base.values())
    for c, label in names.items():
        if c not in cs:
            continue
        xs = cs[c]
        m = med(xs.values())
        ratio = mb / m
        per_round = [base[k] / xs[k] for k in xs if k in base]
        tgt = targets.get(c)
        if c == "c-1t":
            rr, tg, res = "1.000", "", "baseline"
        else:
            rr = f"{ratio:.3f}"
            tg = f"≥ {tgt}" if tgt else "(reference)"
            res = ("PASS" if ratio >= tgt else "MISS") if tgt else ""
        spread = f"{min(per_round):.3f}–{max(per_round):.3f}" if c != "c-1t" else ""
        print(f"| {fs} | {label} | {len(xs)} | {m:.3f} | {min(xs.values()):.3f}–{max(xs.values()):.3f} "
              f"| {files / m:,.0f} | {rr} | {spread} | {tg} | {res} |")
EOF
