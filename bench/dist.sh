#!/usr/bin/env bash
# The distributed engines (issue 16): 1 rank vs 2 ranks, each with one thread, for copy,
# sync --dry-run (of an identical DST), scan (no index) and rm, on a RAM-backed ext4, for
# two trees: FILES × SIZE in DIRS directories, and FILES in one directory.
# Target: 2 ranks >= 1.7x one rank's single-threaded rate.
#
#   bench/dist.sh
#
# Environment: ROUNDS (default 3), FILES (default 100000), SIZE (default 1k), DIRS
# (default 100), IMG_SIZE (default 3G). `mpirun -np 1` runs the local engines (one rank
# is the single-process code path). Contenders alternate in order each round.
# MFU_BIN: a directory holding mpiFileUtils' dcp, dsync, dwalk and drm (built from source:
# Debian has no package); set, each round also runs `dcp -p -X none`, `dsync --dryrun`,
# `dwalk` and `drm` with the same ranks on the same trees, timed by the wall clock around
# mpirun (launch included), plus `dwalk` of an empty directory ("mfu startup") to show
# that launch cost. MFU_VERSION (optional) names their version in the header.
# Needs root (mount, losetup), mpirun (openmpi-bin), libopenmpi-dev, libclang-dev.
set -euo pipefail
shopt -s inherit_errexit

ROUNDS=${ROUNDS:-3}
FILES=${FILES:-100000}
SIZE=${SIZE:-1k}
DIRS=${DIRS:-100}
IMG_SIZE=${IMG_SIZE:-3G}
MFU_BIN=${MFU_BIN:-}
if [ -n "$MFU_BIN" ]; then
    for t in dcp dsync dwalk drm; do
        [ -x "$MFU_BIN/$t" ] || { echo "MFU_BIN=$MFU_BIN has no executable $t" >&2; exit 2; }
    done
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=/dev/shm/manyfiles-bench-dist-$$
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_setup
bench_build --features mpi
fresh_ext4 "$IMG_SIZE" -N $((FILES * 3 + 100000))

MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# mpi_timed TREE OP NP ARGS...: one mpirun of manyfiles ARGS, timed by its own JSON
# elapsed_s; appends "TREE OP NP seconds" to raw.tsv.
mpi_timed() {
    local tree=$1 op=$2 np=$3; shift 3
    local json=$WORK/out.json
    rm -f "$json"
    sync
    "${MPIRUN[@]}" -np "$np" "$MF" "$@" --json "$json" >/dev/null
    python3 - "$json" "$tree" "$op" "$np" >> "$WORK/raw.tsv" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]}\t{sys.argv[3]}\t{sys.argv[4]}\t{s['elapsed_s']:.4f}")
EOF
}

# timed_wall TREE OP NP CMD...: one mpirun of an mpiFileUtils tool, timed by the wall clock
# around mpirun (they write no machine-readable time); appends to raw.tsv like `mpi_timed`.
timed_wall() {
    local tree=$1 op=$2 np=$3 t0 t1; shift 3
    sync
    t0=$EPOCHREALTIME
    "${MPIRUN[@]}" -np "$np" "$@" >/dev/null
    t1=$EPOCHREALTIME
    awk -v tree="$tree" -v op="$op" -v np="$np" -v t0="${t0/,/.}" -v t1="${t1/,/.}" \
        'BEGIN { printf "%s\t%s\t%s\t%.4f\n", tree, op, np, t1 - t0 }' >> "$WORK/raw.tsv"
}

for tree in dirs flat; do
    if [ "$tree" = dirs ]; then layout=(--files-per-dir $((FILES / DIRS)) --fanout "$DIRS"); else layout=(--flat); fi
    rm -rf "$MNT/src"
    "$MF" gen "$MNT/src" --files "$FILES" --size "$SIZE" "${layout[@]}" >/dev/null
    for r in $(seq 1 "$ROUNDS"); do
        for np in $(if [ $((r % 2)) = 1 ]; then echo 1 2; else echo 2 1; fi); do
            echo "$tree round $r/$ROUNDS: $np rank(s)" >&2
            rm -rf "$MNT/dst"
            mpi_timed "$tree" copy "$np" copy "$MNT/src" "$MNT/dst" --threads 1 --quiet
            mpi_timed "$tree" "sync --dry-run" "$np" sync "$MNT/src" "$MNT/dst" --dry-run --threads 1 --quiet
            mpi_timed "$tree" scan "$np" scan "$MNT/src" --threads 1
            mpi_timed "$tree" rm "$np" rm "$MNT/dst" --threads 1 --quiet
            if [ -n "$MFU_BIN" ]; then
                rm -rf "$MNT/dst"
                mkdir -p "$MNT/empty"
                timed_wall "$tree" dcp "$np" "$MFU_BIN/dcp" -p -X none "$MNT/src" "$MNT/dst"
                timed_wall "$tree" "dsync --dryrun" "$np" "$MFU_BIN/dsync" --dryrun "$MNT/src" "$MNT/dst"
                timed_wall "$tree" dwalk "$np" "$MFU_BIN/dwalk" "$MNT/src"
                timed_wall "$tree" drm "$np" "$MFU_BIN/drm" "$MNT/dst"
                timed_wall "$tree" "mfu startup" "$np" "$MFU_BIN/dwalk" "$MNT/empty"
            fi
        done
    done
done

bench_header "Distributed engines: 1 vs 2 ranks (issue 16)" \
    "${MFU_BIN:+MFU_BIN=$MFU_BIN }ROUNDS=$ROUNDS FILES=$FILES SIZE=$SIZE DIRS=$DIRS bench/dist.sh" \
    "$(mpirun --version | head -1)${MFU_BIN:+, mpiFileUtils ${MFU_VERSION:-from $MFU_BIN}}"
echo "load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg) (a shared machine: other work may have run meanwhile)"
echo
echo "ext4 on a loop device over a /dev/shm image; one thread per rank; \`dirs\`: $FILES × $SIZE in $DIRS directories, \`flat\`: one directory of $FILES files."
echo
if [ -n "$MFU_BIN" ]; then
    echo "mpiFileUtils rows (dcp, dsync --dryrun, dwalk, drm) are the wall clock around mpirun, launch and MPI start-up included (\`mfu startup\`: dwalk of an empty directory); manyfiles rows are its own elapsed_s. dcp fsyncs every file it writes and calls sync(2) twice; manyfiles copy does neither."
    echo
fi
python3 - "$WORK/raw.tsv" "$FILES" <<'EOF'
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    tree, op, np, secs = line.rstrip("\n").split("\t")
    t.setdefault((tree, op, np), []).append(float(secs))
print("| tree | op | 1 rank (median s) | 2 ranks (median s) | speed-up | runs | target 1.7× |")
print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
for tree in ["dirs", "flat"]:
    for op in ["copy", "sync --dry-run", "scan", "rm", "dcp", "dsync --dryrun", "dwalk", "drm", "mfu startup"]:
        a, b = t.get((tree, op, "1"), []), t.get((tree, op, "2"), [])
        if not a or not b:
            continue
        ma, mb = statistics.median(a), statistics.median(b)
        print(f"| {tree} | {op} | {ma:.3f} | {mb:.3f} | {ma / mb:.2f}× | {len(a)} | {'yes' if ma / mb >= 1.7 else 'no'} |")
EOF
