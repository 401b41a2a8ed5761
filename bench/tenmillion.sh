#!/usr/bin/env bash
# Ten million files (issue 41, item 4): gen, copy, sync --dry-run, scan and rm on
# FILES empty files, 1,000 a directory, at 100 k, 1 M and 10 M files, each beside the
# minimal C loop of the same calls (bench/tree_loop.c, 2 threads as manyfiles' default on
# this machine) and rsync -an, with whole-process wall time, µs a file and peak RSS; MPI
# scan and rm on 2 ranks at every size when MF_MPI names a binary built with
# `--features mpi`.
#
#   bench/tenmillion.sh                       SIZES="100000 1000000 10000000"
#   MF=BIN MF_MPI=BIN SIZES="…" ROUNDS="3 3 1" bench/tenmillion.sh
#
# One ext4 over a sparse image of IMG_SIZE (24G) in /dev/shm with INODES inodes (2.1 ×
# the largest size: two trees at once) and inode tables written at mkfs (no lazy init
# during the runs). Caches warm: every tree stays in memory, so the figures are the
# file system's and the tool's CPU work, not a disk's (the question is whether the cost
# per file grows with the count, and whether the C loop's grows alike). Per round:
#   mf gen A · mf copy A B · mf sync A B -n · rsync -an A/ B/ · C pair A B ·
#   mf scan A · C scan A · MPI scan A · mf rm B · C copy A B · C rm B ·
#   C gen C · MPI rm C (or C rm) · mf rm A
# Layout: gen --fanout FILES/1000 --files-per-dir 1000: FILES/1000 directories right
# under the root; the C loop's gen makes the same shape (its names are 8 bytes, gen's 16).
# RAW=FILE keeps the raw TSV (size, round, job, contender, s, files, user, sys, RSS KiB,
# others' cores). Needs root, python3, /usr/bin/time, cc, rsync; mpirun for MF_MPI.
set -euo pipefail
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SIZES=${SIZES:-100000 1000000 10000000}
ROUNDS=${ROUNDS:-3 3 1}
THREADS=${THREADS:-2}
IMG_SIZE=${IMG_SIZE:-24G}
RAW=${RAW:-}
WORK=/dev/shm/manyfiles-10m-$$
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_setup
export CACHE=warm

if [ -z "${MF:-}" ]; then bench_build; fi
refuse_debug_build "$MF"
if [ -n "${MF_MPI:-}" ]; then refuse_debug_build "$MF_MPI"; fi
cc -O2 -pthread -o "$WORK/tree_loop" "$ROOT/bench/tree_loop.c"
CLOOP=$WORK/tree_loop

max=0
for n in $SIZES; do [ "$n" -gt "$max" ] && max=$n; done
fresh_ext4 "$IMG_SIZE" -N $((max * 21 / 10 + 100000))
# The raw rows go straight to RAW when given: a run that fails at 10 M keeps the rest.
TSV=${RAW:-$WORK/raw.tsv}
: > "$TSV"

# run SIZE ROUND JOB CONTENDER FILES CMD...: one timed run, recorded.
run() {
    local size=$1 round=$2 job=$3 who=$4 files=$5 b0 b1
    shift 5
    sync
    wait_quiet
    b0=$(busy)
    # lib.sh's timed, but the command's output kept: a failed run shows why.
    local t0 t1
    t0=$EPOCHREALTIME
    if ! /usr/bin/time -f '%U %S %M' -o "$WORK/time" "$@" > "$WORK/out" 2>&1; then
        echo "failed: $*" >&2
        tail -20 "$WORK/out" >&2
        exit 1
    fi
    t1=$EPOCHREALTIME
    echo "$(python3 -c "print(f'{$t1 - $t0:.4f}')") $(cat "$WORK/time")" > "$WORK/last"
    b1=$(busy)
    read -r secs u s rss < "$WORK/last"
    local other
    other=$(python3 -c "print(f'{max(0.0, (($b1 - $b0) / $HZ - $u - $s) / $secs):.2f}')")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$size" "$round" "$job" "$who" "$secs" "$files" "$u" "$s" "$rss" "$other" >> "$TSV"
    printf '  %s files, round %s: %-6s %-9s %8.2f s  %6.2f µs a file  RSS %s KiB  others %s\n' \
        "$size" "$round" "$job" "$who" "$secs" "$(python3 -c "print($secs * 1e6 / $files)")" "$rss" "$other" >&2
}

MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2)
set -- $ROUNDS
for n in $SIZES; do
    rounds=${1:-1}
    shift || true
    dirs=$((n / 1000))
    A=$MNT/a B=$MNT/b C=$MNT/c
    for ((r = 1; r <= rounds; r++)); do
        run "$n" "$r" gen manyfiles "$n" "$MF" gen "$A" --files "$n" --size 0 --files-per-dir 1000 --fanout "$dirs" --threads "$THREADS" -q
        run "$n" "$r" copy manyfiles "$n" "$MF" copy "$A" "$B" --threads "$THREADS" -q
        run "$n" "$r" sync-n manyfiles "$n" "$MF" sync "$A" "$B" --dry-run --threads "$THREADS" -q
        run "$n" "$r" sync-n rsync-an "$n" rsync -an "$A/" "$B/"
        run "$n" "$r" sync-n C-loop "$n" "$CLOOP" pair "$A" "$B" "$THREADS"
        run "$n" "$r" scan manyfiles "$n" "$MF" scan "$A" --threads "$THREADS"
        run "$n" "$r" scan C-loop "$n" "$CLOOP" scan "$A" "$THREADS"
        if [ -n "${MF_MPI:-}" ]; then
            run "$n" "$r" scan mpi-2-ranks "$n" "${MPIRUN[@]}" "$MF_MPI" scan "$A" --threads 1
        fi
        run "$n" "$r" rm manyfiles "$n" "$MF" rm "$B" --threads "$THREADS" -q
        run "$n" "$r" copy C-loop "$n" "$CLOOP" copy "$A" "$B" "$THREADS"
        run "$n" "$r" rm C-loop "$n" "$CLOOP" rm "$B" "$THREADS"
        run "$n" "$r" gen C-loop "$n" "$CLOOP" gen "$C" "$n" "$dirs" 0 "$THREADS"
        if [ -n "${MF_MPI:-}" ]; then
            run "$n" "$r" rm mpi-2-ranks "$n" "${MPIRUN[@]}" "$MF_MPI" rm "$C" --threads 1 -q
        else
            "$CLOOP" rm "$C" "$THREADS" > /dev/null
        fi
        run "$n" "$r" rm manyfiles "$n" "$MF" rm "$A" --threads "$THREADS" -q
    done
done

bench_header "Ten million files: gen, copy, sync -n, scan and rm at 100 k, 1 M and 10 M (issue 41)" \
    "SIZES='$SIZES' ROUNDS='$ROUNDS' bench/tenmillion.sh" "$("$MF" --version), $(rsync --version | head -1)"
python3 - "$TSV" <<'EOF'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = {}
sizes = []
for size, rnd, job, who, secs, files, u, s, rss, other in rows:
    size = int(size)
    if size not in sizes:
        sizes.append(size)
    by.setdefault((job, who), {}).setdefault(size, []).append((float(secs) / int(files) * 1e6, int(rss), float(other)))
small = sizes[0]
print("µs a file (median of the rounds; whole process, caches warm), and its growth against the", f"{small:,}-file figure:\n")
head = " | ".join(f"{s:,} files" for s in sizes)
print(f"| job | contender | {head} | growth at {sizes[-1]:,} | peak RSS MiB at {sizes[-1]:,} | others' cores (max) |")
print("|---|---|" + "---:|" * len(sizes) + "---:|---:|---:|")
for (job, who), per in by.items():
    meds = [st.median(v[0] for v in per[s]) if s in per else None for s in sizes]
    cells = " | ".join(f"{m:.2f}" if m is not None else "—" for m in meds)
    g = f"{meds[-1] / meds[0]:.2f}×" if meds[0] and meds[-1] else "—"
    rss = max(v[1] for v in per[sizes[-1]]) / 1024 if sizes[-1] in per else 0
    other = max(v[2] for s in per for v in per[s])
    print(f"| {job} | {who} | {cells} | {g} | {rss:.0f} | {other:.2f} |")
print("\nraw (size, round, job, contender, s, files, user s, sys s, peak RSS KiB, others' cores):\n")
print("```")
for r in rows:
    print("\t".join(r))
print("```")
EOF
