#!/usr/bin/env bash
# The statistics of `predict` A/B on the same runs: re-predict every case that
# bench/predict_check.sh kept (KEEP=DIR) from its saved calibration with this build —
# no new calibration runs, no new checks — and set the old and the new intervals beside
# the checks that were run then. What changes is only how the models and intervals are
# made from the same measurements (`predict --model cal.json --inventory inv.json`;
# a calibration fitted by an older build is fitted again when read).
#
#   bench/predict_recheck.sh KEPT_DIR
#   LEVEL=90% bench/predict_recheck.sh KEPT_DIR    the new intervals at `predict --level 90%`
#
# Each case needs the tree's inventory (inv.json, written by predict_check.sh since
# session 26); for older cases it is taken here of a `cp -rL` copy of the tree on a
# RAM-backed ext4 (root), as predict_check.sh's source was: for exFAT cases, names that
# differ only in case collapse there and not here (the files counts are printed).
# Output: Markdown on stdout.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=/dev/shm/mf-predict-recheck-$$
source "$ROOT/bench/lib.sh"
[ $# -eq 1 ] && [ -d "$1" ] || { echo "usage: bench/predict_recheck.sh KEPT_DIR" >&2; exit 2; }
KEPT=$(cd "$1" && pwd)
LEVEL=${LEVEL:-95%}
bench_setup
bench_build
bench_header "predict's statistics A/B on the same runs" "LEVEL=$LEVEL bench/predict_recheck.sh $KEPT" "$("$MF" --version)"
mounted=""
trap 'st=$?; [ -n "$mounted" ] && "$MF" umount "$mounted" >/dev/null 2>&1; (exit $st); bench_cleanup' EXIT
for c in "$KEPT"/c*; do
    [ -f "$c/case" ] || continue
    tree=$(cut -f2 "$c/case")
    if [ ! -f "$c/inv.json" ]; then
        [ "$(id -u)" = 0 ] || { echo "predict_recheck: $c has no inv.json; taking one needs root" >&2; exit 2; }
        if [ -z "$mounted" ]; then
            mounted=$WORK/t
            mkdir -p "$mounted"
            "$MF" mount ext4@ram "$mounted" --size 4GiB >/dev/null
        fi
        rm -rf "$mounted/src"
        cp -rL "$tree" "$mounted/src" 2>/dev/null || true
        "$MF" scan --inventory "$c/inv.json" "$mounted/src" >/dev/null
    fi
    echo "re-predicting $c ($tree)" >&2
    "$MF" predict --model "$c/cal.json" --inventory "$c/inv.json" --level "$LEVEL" --json "$c/pred-new.json" --force \
        >"$c/pred-new.txt" 2>"$c/pred-new.err" || { echo "  failed: $(tail -1 "$c/pred-new.err")" >&2; continue; }
done
python3 - "$KEPT" <<'EOF'
import json, os, sys, statistics
kept = sys.argv[1]
label = {"copy": "copy", "walk": "scan", "rm": "rm"}
rows = []
tot = {"old": [0, 0, [], []], "new": [0, 0, [], []]}  # inside, runs, errors, widths
for c in sorted((d for d in os.listdir(kept) if d.startswith("c")), key=lambda s: int(s[1:])):
    d = os.path.join(kept, c)
    if not os.path.exists(os.path.join(d, "pred-new.json")):
        continue
    target, tree = open(os.path.join(d, "case")).read().strip().split("\t")
    old, new = (json.load(open(os.path.join(d, f))) for f in ("pred.json", "pred-new.json"))
    for op in label:
        runs = []
        for f in sorted(os.listdir(d)):
            if f.startswith(op) and f[len(op):-5].isdigit() and f.endswith(".json"):
                j = json.load(open(os.path.join(d, f)))
                if j.get("elapsed_s"):
                    runs.append(j["elapsed_s"])
        cells = []
        for name, p in (("old", old), ("new", new)):
            q = next((x for x in p["predictions"] if x["op"] == op), None)
            if not q or not q.get("interval95") or not runs:
                cells.append("—")
                continue
            if q.get("usable") is False:
                cells.append("not fitted (no answer)")
                continue
            # The interval at the level asked for (`interval`; older files: `interval95`).
            s, (lo, hi) = q["seconds"], q.get("interval") or q["interval95"]
            ins = sum(lo <= r <= hi for r in runs)
            w = max(hi / s - 1, 1 - lo / s)
            t = tot[name]
            t[0] += ins; t[1] += len(runs); t[2] += [abs(r / s - 1) for r in runs]; t[3].append(w)
            cells.append(f"{s*1e3:.0f} ms [{lo*1e3:.0f} – {hi*1e3:.0f}] ±{w*100:.0f}%, {ins}/{len(runs)}")
        rows.append(f"| {target} | {tree} ({new['tree']['files']} files) | {label[op]} | "
                    f"{', '.join(f'{r*1e3:.0f}' for r in runs)} | {cells[0]} | {cells[1]} |")
print("| target | tree | op | checks, ms | before: predicted [95%], half-width, inside | this build |")
print("|---|---|---|---:|---:|---:|")
print("\n".join(rows))
print()
for name in ("old", "new"):
    ins, n, errs, widths = tot[name]
    if n:
        print(f"- {'before' if name == 'old' else 'this build'}: {ins}/{n} runs inside ({ins/n*100:.0f}%), "
              f"median absolute error {statistics.median(errs)*100:.1f}%, median half-width {statistics.median(widths)*100:.0f}%")
EOF
