#!/usr/bin/env bash
# MPI scaling benchmark: the job's create rate with 1 rank and with 2 ranks (each rank in
# its own run directory, i.e. separate directories), interleaved, on a RAM-backed ext4
# image (no disk noise). Target of issue 7: 2 ranks >= 1.6x one rank's aggregate rate.
#
#   bench/mpi.sh
#
# Environment: ROUNDS (default 7), FILES per rank (default 50000), SIZE (default 1k),
# IMG_SIZE (default 4G), QUIET_CORES / QUIET_MAX (wait before each run until other
# processes use fewer than QUIET_CORES cores, up to QUIET_MAX s; defaults 0.15, 120).
# Also runs one process with --threads 2 (the same parallelism without MPI) for context.
# Needs root (mount, losetup), mpirun (openmpi-bin), libopenmpi-dev, libclang-dev.
set -euo pipefail
shopt -s inherit_errexit

ROUNDS=${ROUNDS:-7}
FILES=${FILES:-50000}
SIZE=${SIZE:-1k}
IMG_SIZE=${IMG_SIZE:-4G}
QUIET_CORES=${QUIET_CORES:-0.15}
QUIET_MAX=${QUIET_MAX:-120}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=/dev/shm/manyfiles-bench-mpi-$$
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_setup
bench_build --features mpi
fresh_ext4 "$IMG_SIZE"

HZ=$(getconf CLK_TCK)
wait_quiet() {
    local t=0 b0 b1
    while :; do
        b0=$(busy); sleep 1; b1=$(busy)
        if python3 -c "import sys; sys.exit(0 if ($b1 - $b0) / $HZ < $QUIET_CORES else 1)"; then break; fi
        t=$((t + 1))
        if [ "$t" -ge "$QUIET_MAX" ]; then echo "  (not quiet after ${QUIET_MAX}s, running anyway)" >&2; break; fi
    done
}

# run NAME THREADS CMD... : one timed create of FILES per rank; appends "NAME rate" to raw.tsv
run() {
    local name=$1 threads=$2; shift 2
    local json=$WORK/$name.json
    sync
    wait_quiet
    "$@" ops --target "$MNT" --files "$FILES" --size "$SIZE" --ops create --runs 1 --threads "$threads" \
        --quiet --json "$json" >/dev/null
    python3 - "$json" "$name" >> "$WORK/raw.tsv" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))["measurements"][0]
print(f"{sys.argv[2]}\t{m['files'] / m['elapsed_s']:.1f}")
EOF
}

MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
contenders=(np1 np2 threads2)
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r/$ROUNDS" >&2
    for i in 0 1 2; do
        c=${contenders[$(((i + r) % 3))]}
        case $c in
            np1) run np1 1 "${MPIRUN[@]}" -np 1 "$MF" ;;
            np2) run np2 1 "${MPIRUN[@]}" -np 2 "$MF" ;;
            threads2) run threads2 2 "$MF" ;;
        esac
    done
done

CPU=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo "## MPI scaling benchmark"
echo
echo "- command: \`ROUNDS=$ROUNDS FILES=$FILES SIZE=$SIZE bench/mpi.sh\`"
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- machine: $CPU, $(nproc) cores, kernel $(uname -r); ext4 on a loop device over a /dev/shm image"
echo "- manyfiles: $(cd "$ROOT" && git rev-parse --short HEAD), $(mpirun --version | head -1)"
echo
python3 - "$WORK/raw.tsv" "$FILES" <<'EOF'
import statistics, sys
rates = {}
for line in open(sys.argv[1]):
    name, rate = line.split()
    rates.setdefault(name, []).append(float(rate))
med = {k: statistics.median(v) for k, v in rates.items()}
print("| contender | files per rank | runs | median job rate (files/s) | min … max | ratio to 1 rank |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
label = {"np1": "mpirun -np 1", "np2": "mpirun -np 2 (separate directories)", "threads2": "1 process, --threads 2"}
for k in ["np1", "np2", "threads2"]:
    v = rates[k]
    print(f"| {label[k]} | {sys.argv[2]} | {len(v)} | {med[k]:,.0f} | {min(v):,.0f} … {max(v):,.0f} | {med[k] / med['np1']:.2f}× |")
ok = med["np2"] / med["np1"] >= 1.6
print()
print(f"target 2 ranks >= 1.6x one rank: {'PASS' if ok else 'MISS'} ({med['np2'] / med['np1']:.2f}x)")
EOF
