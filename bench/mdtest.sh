#!/usr/bin/env bash
# manyfiles mdtest --easy/--hard against the real mdtest (issue 42, item 6), interleaved:
# each round runs mdtest once (-i 1) and manyfiles once (--runs 1) per preset and per
# manyfiles --paths mode, on the same target, then prints per phase the median rate of
# each over the rounds, their ratio and the per-round ratios' range.
#
#   ROUNDS=5 NP=1 bash bench/mdtest.sh                 (a fresh 3 GiB ext4 in /dev/shm)
#   T=/var/tmp/mdtest-disk ROUNDS=5 bash bench/mdtest.sh   (a directory of yours)
#
# T: the directory both work in (mdtest in T/mdtest-easy|hard, manyfiles in its run
# directory in T); unset, a fresh ext4 on a loop device over an image in RAM. EASY_N / HARD_N: files per rank (IO500's phases at this size).
# SUMMARY_ONLY=1 OUT=DIR prints the table again from DIR's outputs.
# SYNC=1 (default): mdtest -Y (a `system("sync")` at the end of every phase, inside its
# time: stat and read too) against manyfiles' durable time (a syncfs of the target ends
# the write phases only); SYNC=0: neither syncs (mdtest without -Y, manyfiles --until
# returned), the calls alone.
# PATHS: the manyfiles --paths modes to run ("full relative"). MDTEST: the mdtest binary
# (hpc/ior built with mpicc: ./bootstrap && ./configure CC=mpicc && make -C src mdtest).
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${WORK:-/dev/shm/mdtest-bench-$$}
source bench/lib.sh

if [ -z "${T:-}" ]; then
  bench_setup
  fresh_ext4 3G
  T=$MNT
fi
ROUNDS=${ROUNDS:-5}
NP=${NP:-1}
EASY_N=${EASY_N:-20000}
HARD_N=${HARD_N:-10000}
PATHS=${PATHS:-full relative}
MDTEST=${MDTEST:-$(command -v mdtest || true)}
MF=${MF:-target/release/manyfiles}
[ -x "$MDTEST" ] || { echo "mdtest not found: build it from hpc/ior (see the header)" >&2; exit 2; }
refuse_debug_build "$MF"
OUT=${OUT:-$(mktemp -d /tmp/mdtest-bench.XXXXXX)}
MPI=(mpirun --allow-run-as-root -np "$NP")
SYNC=${SYNC:-1}
if [ "$SYNC" = 1 ]; then Y=(-Y); UNTIL=durable; else Y=(); UNTIL=returned; fi

if [ -n "${SUMMARY_ONLY:-}" ] && [ -f "$OUT/rounds" ]; then ROUNDS=$(cat "$OUT/rounds"); fi
if [ -z "${SUMMARY_ONLY:-}" ]; then
  echo "$ROUNDS" > "$OUT/rounds"
  echo "# $(date -u +%FT%TZ) · $(uname -r) · $(nproc) cores · target $T · np $NP · rounds $ROUNDS · SYNC=$SYNC (mdtest ${Y[*]:-without -Y}, manyfiles --until $UNTIL)" | tee "$OUT/README"
  echo "# mdtest: $MDTEST; manyfiles: $("$MF" --version)" | tee -a "$OUT/README"
fi

# SUMMARY_ONLY=1 OUT=DIR: only the table, from the outputs already in DIR.
for round in $(seq 1 "$ROUNDS"); do
  [ -n "${SUMMARY_ONLY:-}" ] && break
  for preset in easy hard; do
    if [ "$preset" = easy ]; then
      n=$((EASY_N)); args=(-n "$n" -u -L -F -P -N 1 "${Y[@]}" -i 1)
    else
      n=$((HARD_N)); args=(-n "$n" -t -F -P -w 3901 -e 3901 -N 1 "${Y[@]}" -i 1)
    fi
    sync  # untimed: each run starts from a clean file system, not the last one's writeback
    "${MPI[@]}" "$MDTEST" "${args[@]}" -d "$T/mdtest-$preset" > "$OUT/mdtest-$preset-$round.txt" 2>&1
    for p in $PATHS; do
      sync
      "${MPI[@]}" "$MF" mdtest --"$preset" --files "$n" --runs 1 --paths "$p" --until "$UNTIL" --target "$T" -q \
        --json "$OUT/mf-$p-$preset-$round.json" > "$OUT/mf-$p-$preset-$round.txt" 2>&1
    done
    echo "round $round $preset done" >&2
  done
done

python3 - "$OUT" "$ROUNDS" "$PATHS" <<'EOF'
import json, re, statistics, sys
out, rounds, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
names = {"File creation": "create", "File stat": "stat", "File read": "read", "File removal": "delete"}
def mdtest_rates(path):
    text = open(path).read()
    part = text.split("SUMMARY rate")[1].split("SUMMARY time")[0]
    rates = {}
    for line in part.splitlines():
        for long, op in names.items():
            if line.strip().startswith(long):
                rates[op] = float(line.split()[-2]) / 1e3  # Mean, kIOPS
    return rates
def mf_rates(path):
    rs = json.load(open(path))
    until = rs["experiment"].get("until", "durable")
    rates = {}
    for m in rs["measurements"]:
        r = m.get("result", m)
        secs = r["elapsed_s"] if until == "durable" or r.get("returned_s") is None else r["returned_s"]
        rates[m["op"]] = r["files"] / secs / 1e3
    return rates
print("| preset | phase | mdtest kIOPS (median) | " + " | ".join(f"manyfiles --paths {p} kIOPS (median) | {p} / mdtest (medians) | per-round {p} / mdtest" for p in paths) + " |")
print("|---|---|---:|" + "---:|---:|---:|" * len(paths))
for preset in ["easy", "hard"]:
    md = [mdtest_rates(f"{out}/mdtest-{preset}-{r}.txt") for r in range(1, rounds + 1)]
    mf = {p: [mf_rates(f"{out}/mf-{p}-{preset}-{r}.json") for r in range(1, rounds + 1)] for p in paths}
    for op in ["create", "stat", "read", "delete"]:
        if op not in mf[paths[0]][0]:
            continue
        a = statistics.median(x[op] for x in md)
        cells = [f"{a:.1f}"]
        for p in paths:
            b = statistics.median(x[op] for x in mf[p])
            per = [mf[p][i][op] / md[i][op] for i in range(rounds)]
            cells += [f"{b:.1f}", f"**{b / a:.2f}**", f"{min(per):.2f}–{max(per):.2f}"]
        print(f"| {preset} | {op} | " + " | ".join(cells) + " |")
EOF
echo "raw outputs: $OUT" >&2
