#!/usr/bin/env bash
# Do the intervals cover a re-run? (issue 13) Runs the same experiment N times in a row
# (default: the default ladder on a RAM-backed ext4 image, with its default adaptive
# runs and 3-minute budget) and checks, per op, that every invocation's 95% interval of
# the per-file cost contains the median of the N estimates; also that no cell's printed
# interval is wider than its value, and how each invocation's budget went.
#
#   bench/repeat.sh                      N=5, ARGS='--fs ext4@ram'
#   N=5 ARGS='--target /var/tmp' bench/repeat.sh
#
# Needs root for --fs, cargo, python3. Prints Markdown for BENCHMARKS.md.
set -euo pipefail
N=${N:-5}
ARGS=${ARGS:---fs ext4@ram}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=/dev/shm/manyfiles-repeat-$$
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_setup
bench_build
bench_header "intervals against re-runs" "N=$N ARGS='$ARGS' bench/repeat.sh" "$("$MF" --version)"
for ((i = 1; i <= N; i++)); do
    echo "invocation $i of $N: manyfiles ladder $ARGS" >&2
    t0=$EPOCHREALTIME
    # shellcheck disable=SC2086
    "$MF" ladder $ARGS -q --json "$WORK/r$i.json" > "$WORK/out$i.txt"
    echo "  took $(python3 -c "print(round($EPOCHREALTIME - $t0, 1))") s, load $(cut -d' ' -f1 /proc/loadavg)" >&2
done
python3 - "$WORK" "$N" <<'EOF'
import json, sys, statistics as st
from math import isfinite
work, n = sys.argv[1], int(sys.argv[2])
runs = [json.load(open(f"{work}/r{i}.json")) for i in range(1, n + 1)]
def t975(df):
    # two-sided 95% t quantiles (df 1..30), normal beyond
    tab = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
           2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
    return tab[df - 1] if 1 <= df <= 30 else 1.96
print("Per-file cost a (µs) of every invocation with its 95% interval (a ± t·s.e., cells as the unit); ✓ = contains the median of the", n, "estimates.\n")
print("| op | " + " | ".join(f"run {i}" for i in range(1, n + 1)) + " | median of runs | covered |")
print("|---|" + "---:|" * n + "---:|---:|")
ops = [m["op"] for m in runs[0]["models"]]
for op in ops:
    ms = [next((m for m in r["models"] if m["op"] == op), None) for r in runs]
    a = [m["per_file_s"] * 1e6 for m in ms if m]
    med = st.median(a)
    cells, hits = [], 0
    for m in ms:
        if not m:
            cells.append("—"); continue
        h = t975(max(m.get("df", 1), 1)) * m["per_file_se"] * 1e6
        lo, hi = m["per_file_s"] * 1e6 - h, m["per_file_s"] * 1e6 + h
        ok = lo <= med <= hi
        hits += ok
        cells.append(f"{m['per_file_s'] * 1e6:.3g} [{lo:.3g} – {hi:.3g}] {'✓' if ok else '✗'}")
    print(f"| {op} | " + " | ".join(cells) + f" | {med:.3g} | {hits}/{len(a)} |")
print()
def span(r):
    # How far apart a cell's blocks ran (at_s: end of the run's trial), median and most.
    cells = {}
    for m in r["measurements"]:
        if m.get("at_s") is None or m.get("block") is None:
            continue
        c = cells.setdefault((m["target"], m["op"], m["tree_key"]), [])
        c.append((m["block"], m["at_s"]))
    spans = [max(a for _, a in c) - min(a for _, a in c) for c in cells.values() if len({b for b, _ in c}) > 1]
    return f"{st.median(spans):.0f} / {max(spans):.0f}" if spans else "—"
print("| invocation | cells | runs per cell | reached ±5% | budget spent | took s | disturbed runs | intervals wider than the value | blocks spanned s (median / most) |")
print("|---:|---:|---:|---:|---|---:|---:|---:|---:|")
for i, r in enumerate(runs, 1):
    s = r["summaries"]
    ns = [x["n"] for x in s]
    reached = sum(1 for x in s if (x.get("stopped") or "").startswith("precision reached"))
    wide = sum(1 for x in s if x.get("median_ci95_s") and x["median_ci95_s"][1] - x["median_ci95_s"][0] > x["median_s"])
    a = r["experiment"].get("adaptive") or {}
    print(f"| {i} | {len(s)} | {min(ns)}–{max(ns)} | {reached} | {a.get('budget_spent')} | {a.get('spent_s', 0):.0f} | "
          f"{sum(x.get('disturbed', 0) for x in s)} | {wide} (printed as 'too scattered') | {span(r)} |")
EOF
# Cell by cell (issue 27): does each invocation's interval of a cell's median contain the
# median of the other invocations' medians? And what does `compare` say of every pair?
python3 - "$WORK" "$N" <<'EOF2'
import json, sys, statistics as st
work, n = sys.argv[1], int(sys.argv[2])
runs = [json.load(open(f"{work}/r{i}.json")) for i in range(1, n + 1)]
key = lambda s: (s["target"], s["op"], s["tree_key"])
cells = {}
for i, r in enumerate(runs):
    for s in r["summaries"]:
        cells.setdefault(key(s), {})[i] = s
hits = total = noint = 0
by_op = {}
for k, per in cells.items():
    for i, s in per.items():
        others = [o["median_s"] for j, o in per.items() if j != i]
        if not others:
            continue
        ci = s.get("median_ci95_s")
        if not ci:
            noint += 1
            continue
        m = st.median(others)
        ok = ci[0] <= m <= ci[1]
        total += 1
        hits += ok
        h = by_op.setdefault(k[1], [0, 0])
        h[0] += ok
        h[1] += 1
print(f"\nCells: each invocation's 95% interval of a cell's median against the median of the other {n - 1} invocations' medians: "
      f"{hits} of {total} contain it ({100 * hits / max(total, 1):.1f}%); {noint} cell-invocations without an interval.\n")
print("| op | covered |")
print("|---|---:|")
for op, (h, t) in by_op.items():
    print(f"| {op} | {h}/{t} |")
EOF2
echo
echo "compare of every pair of invocations (cells flagged slower or faster):"
for ((i = 1; i <= N; i++)); do
    for ((j = i + 1; j <= N; j++)); do
        line=$("$MF" compare "$WORK/r$i.json" "$WORK/r$j.json" 2>&1 | grep -o '[0-9]* of [0-9]* cells differ' || true)
        echo "- r$i vs r$j: ${line:-no verdict line}"
    done
done
