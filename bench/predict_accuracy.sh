#!/usr/bin/env bash
# Prediction accuracy: calibrate with a ladder (≤ 64 MiB) on a target, predict the copy,
# read, scan and delete time of real trees that were not part of the calibration, then
# run those on the same target and report the prediction error and whether the 95%
# prediction interval holds the measured time.
#
#   bench/predict_accuracy.sh [TREE...]   default: the cargo registry sources and
#                                          /usr/lib/python3.11 (two shapes: ~5.6 files of
#                                          ~16 KiB per directory, ~15 files of ~40 KiB)
#
#   copy    manyfiles copy --threads 1 TREE T/copy2    predicted by the copy op's model
#           (its own elapsed_s from --json: the copy, without the process start-up that no
#           ladder phase contains; the wall time with start-up is printed as copy-wall)
#   cp      cp -r TREE/. T/copy                      predicted by the ladder's cmd:cp op (the
#                                                    same cp command timed on every rung)
#   read    read_tree T/copy (bench/read_tree.c: openat/read/close relative to directory
#           fds, one thread, as the read op does; its own timed region) predicted by read
#   scan    find T/copy -printf '%s'                  predicted by list + stat
#   delete  rm -rf T/copy                            predicted by delete
#
# The target is, by default, a fresh ext4 on a loop device whose image lives in RAM
# (/dev/shm): the file system's own cost without the noise of a shared VM disk (set
# TARGET=DIR to measure an existing directory instead). cp, cat, find and rm use one
# thread, so the ladder runs with --threads 1; its tree shape takes the real tree's files
# per directory (the model can only learn a directory cost from trees that have as many
# directories per file), so every tree gets its own calibration. The source tree stays
# warm (read once before the first run).
# The ladder runs with --until returned (the tools' times end when they return: cp, cat,
# find, rm and `manyfiles copy` do not sync) and --cache warm (the tasks run on warm
# caches: the source is read once before, the copy is read right after it was written);
# CACHE=cold drops the caches before the ladder's read-side phases and before the real
# read instead (the copies' source stays warm, so copy is then not comparable).
# The ladder is calibrated at the tree's own size: its total is the tree's bytes and its
# largest rung the power of two at or above the tree's file count, so the tree lies
# inside the calibrated range (an extrapolation in bytes widens every interval).
# Environment: TARGET, RUNS (runs of each real task, default 5), LADDER_RUNS (fixed runs
# per ladder cell; default: adaptive, `--precision 5% --max-time $LADDER_TIME`,
# LADDER_TIME default 5m), TOTAL (ladder total, default the tree's bytes), TO (largest
# rung, default see above), STEP (rung factor, default 2: more rungs, more degrees of
# freedom for the intervals), OUT (where the files go, default a new temporary directory).
# Needs root for the RAM target (mkfs.ext4, mount) and drop_caches, cargo, cc, python3,
# bc, cp, find, rm.
set -euo pipefail

if [ $# -gt 0 ]; then TREES=("$@"); else
    TREES=("$(ls -d "$HOME"/.cargo/registry/src/*/ | head -1)" /usr/lib/python3.11)
fi
TARGET=${TARGET:-}
RUNS=${RUNS:-5}
LADDER_RUNS=${LADDER_RUNS:-}
LADDER_TIME=${LADDER_TIME:-5m}
STEP=${STEP:-2}
CACHE=${CACHE:-warm}
OUT=${OUT:-$(mktemp -d /tmp/mf-predict.XXXXXX)}
cd "$(dirname "$0")/.."
WORK=/nonexistent # lib.sh's paths are not used here: only its busy()
# shellcheck source=bench/lib.sh
source bench/lib.sh
cargo build --release --quiet
MF=$PWD/target/release/manyfiles
mkdir -p "$OUT"
cc -O2 -o "$OUT/read_tree" bench/read_tree.c
READ_TREE=$OUT/read_tree
MNT=
cleanup() {
    rm -rf "${WORK:-/nonexistent}"
    if [ -n "$MNT" ]; then umount "$MNT" && rmdir "$MNT" && rm -f /dev/shm/mf-predict.img; fi
}
trap cleanup EXIT
if [ -z "$TARGET" ]; then
    truncate -s 2G /dev/shm/mf-predict.img
    mkfs.ext4 -q -F /dev/shm/mf-predict.img
    MNT=$(mktemp -d /tmp/mf-predict-mnt.XXXXXX)
    mount -o loop /dev/shm/mf-predict.img "$MNT"
    TARGET=$MNT
fi
WORK=$(mktemp -d "$TARGET/mf-predict-work.XXXXXX")
echo "machine: $(uname -srm), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "target: $TARGET ($(findmnt -no FSTYPE,SOURCE -T "$TARGET" | xargs))  out: $OUT"
one_tree() {
local TREE=$1 O=$2
mkdir -p "$O"
FILES=$(find "$TREE" -type f | wc -l)
DIRS=$(find "$TREE" -type d | wc -l)
FPD=$(( FILES / DIRS > 0 ? FILES / DIRS : 1 ))
BYTES=$(find "$TREE" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
LTOTAL=${TOTAL:-$BYTES}
LTO=${TO:-$(python3 -c "import sys; n=int(sys.argv[1]); p=1
while p < n: p *= 2
print(p)" "$FILES")}
if [ -n "$LADDER_RUNS" ]; then HOWMANY=(--runs "$LADDER_RUNS"); else HOWMANY=(--precision 5% --max-time "$LADDER_TIME"); fi

echo
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tree: $TREE ($FILES files, $BYTES bytes, $DIRS dirs: ladder with --files-per-dir $FPD --total $LTOTAL --to $LTO ${HOWMANY[*]})"

"$MF" ladder --total "$LTOTAL" --to "$LTO" --ops create,stat,list,read,copy,delete "${HOWMANY[@]}" --step "$STEP" \
    --cmd 'cp=cp -r {src}/. {dst}' \
    --threads 1 --files-per-dir "$FPD" --target "$TARGET" --cache "$CACHE" --until returned \
    --json "$O/calib.json" --quiet > "$O/calib.txt"
"$MF" predict --model "$O/calib.json" --tree "$TREE" --threads 1 --json "$O/predict.json" > "$O/predict.txt"

# Before each timed task: wait (up to QUIET_MAX s, default 30) until other processes use
# less than 0.3 cores, as the ladder leaves out runs that others disturbed.
quiet() {
    local i b0 b1 t0 t1
    for i in $(seq 1 "${QUIET_MAX:-30}"); do
        b0=$(busy); t0=$(date +%s%N); sleep 0.5; b1=$(busy); t1=$(date +%s%N)
        # jiffies are 1/100 s; our own sleep uses none
        [ $(( (b1 - b0) * 10000000 * 10 / (t1 - t0) )) -lt 3 ] && return 0
    done
    echo "  (machine busy: measuring anyway)" >&2
}
# Warm the source tree, then time each tool RUNS times.
# (through cat: GNU tar does not read file contents when writing to /dev/null itself)
tar -cf - -C "$TREE" . | cat > /dev/null
now() { date +%s.%N; }
: > "$O/actual.tsv"
for r in $(seq 1 "$RUNS"); do
    sync
    quiet; t0=$(now); cp -r "$TREE/." "$WORK/copy"; t1=$(now)
    if [ "$CACHE" = cold ]; then
        sync; echo 3 > /proc/sys/vm/drop_caches
    fi
    quiet; rd=$("$READ_TREE" "$WORK/copy" | cut -d' ' -f1)
    [ "$CACHE" = cold ] && tar -cf - -C "$TREE" . | cat > /dev/null # the source warm again for the copies
    quiet; t2a=$(now); find "$WORK/copy" -printf '%s\n' > /dev/null; t2=$(now)
    quiet; t2b=$(now); rm -rf "$WORK/copy"; t3=$(now)
    quiet; t3a=$(now); "$MF" copy --threads 1 --quiet --json "$O/copy.json" "$TREE" "$WORK/copy2" > /dev/null; t4=$(now)
    cs=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['elapsed_s'])" "$O/copy.json")
    rm -rf "$WORK/copy2"
    printf 'cp\t%s\nread\t%s\nscan\t%s\ndelete\t%s\ncopy\t%s\ncopy-wall\t%s\n' "$(echo "$t1 - $t0" | bc)" "$rd" \
        "$(echo "$t2 - $t2a" | bc)" "$(echo "$t3 - $t2b" | bc)" "$cs" "$(echo "$t4 - $t3a" | bc)" >> "$O/actual.tsv"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$O" "$TREE" <<'PY'
import json, statistics, sys
out = sys.argv[1]
pred = json.load(open(f"{out}/predict.json"))
byop = {p["op"]: p for p in pred["predictions"]}
actual = {}
for line in open(f"{out}/actual.tsv"):
    op, s = line.split()
    actual.setdefault(op, []).append(float(s))
combos = {"copy": ["copy"], "copy-wall": ["copy"], "read": ["read"], "cp": ["cmd:cp"], "scan": ["list", "stat"], "delete": ["delete"]}
t = pred["tree"]
print(f"\ntree: {t['files']} files, {t['bytes']/2**20:.1f} MiB, {t['dirs']} dirs")
print(f"tree: {sys.argv[2]}")
print("\n| task | predicted by | predicted (95% interval) | interval | measured median (min … max) | error | inside |")
print("|---|---|---:|---:|---:|---:|:---:|")
for task, ops in combos.items():
    ps = [byop[o] for o in ops]
    s = sum(p["seconds"] for p in ps)
    lo = sum((p["interval95"] or [p["seconds"]] * 2)[0] for p in ps)
    hi = sum((p["interval95"] or [p["seconds"]] * 2)[1] for p in ps)
    a = actual[task]
    m = statistics.median(a)
    extra = "; ".join(sorted({w for p in ps for w in p["extrapolation"]}))
    inside = "yes" if lo <= m <= hi else "NO"
    print(f"| {task} | {' + '.join(ops)} | {s:.3f} s ({lo:.3f} … {hi:.3f}) | {100*(lo/s-1):+.0f}% … {100*(hi/s-1):+.0f}% | {m:.3f} s ({min(a):.3f} … {max(a):.3f}) | {100*(s-m)/m:+.0f}% | {inside} |")
    if extra:
        print(f"|  | extrapolation: {extra} | | | | | |")
PY
}
i=0
for T in "${TREES[@]}"; do
    i=$((i + 1))
    one_tree "$T" "$OUT/tree$i"
done
