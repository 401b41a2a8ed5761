#!/usr/bin/env bash
# Issue 27's prediction acceptance: `predict --tree PATH --on TARGET`, then the user's
# checks, one run each, repeated: `copy --cold --durable`, `scan --cold`,
# `rm --cold --durable` (the engines the calibration timed). For every tree × target × op:
# the prediction, its 95% interval, each measured run, the error and whether the interval
# held the run. Root (cold caches, mounts).
#
#   bench/predict_check.sh [TREE...]
#     default trees (real, not generated; four shapes):
#       /usr/share/doc                       many tiny directories
#       /usr/share/man                       a few huge directories (man1: ~18,000 entries)
#       CARGO_REGISTRY_SRC                   deep and narrow (crate sources, depth up to 16)
#       /usr/lib/gcc                         mixed sizes up to ~35 MiB, few files
#   TARGETS="ext4@ram disk exfat@ram"        managed ext4 and exFAT images in RAM (mounted
#                                            with `manyfiles mount`), a directory on the
#                                            VM's disk (/var/tmp)
#   CHECKS=3 MAX_TIME=60s                    checks per op; calibration budget
#
# The tree is first copied onto the target (untimed, `cp -rL`: exFAT holds no symlinks)
# and predicted and checked from there: the calibration copies target to target, so a
# check from another disk would pay that disk's reads too.
# Output: Markdown on stdout (table per case, then the acceptance summary); raw JSON in
# $KEEP if set.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=/dev/shm/mf-predict-check-$$
source "$ROOT/bench/lib.sh"
[ "$(id -u)" = 0 ] || { echo "predict_check: needs root (cold caches, mounts)" >&2; exit 2; }
bench_setup
bench_build
CHECKS=${CHECKS:-3}
MAX_TIME=${MAX_TIME:-60s}
TARGETS=${TARGETS:-"ext4@ram disk exfat@ram"}
if [ $# -gt 0 ]; then
    TREES=("$@")
else
    reg=$(ls -d /root/.cargo/registry/src/*/ 2>/dev/null | head -1)
    TREES=(/usr/share/doc /usr/share/man ${reg:+"$reg"} /usr/lib/gcc)
fi
DISK_WORK=/var/tmp/mf-predict-check-$$
OUT=$WORK/out
mkdir -p "$OUT"
mounted=()
on_exit_umount() {
    for m in "${mounted[@]}"; do "$MF" umount "$m" >/dev/null 2>&1 || true; done
}
trap 'st=$?; on_exit_umount; (exit $st); bench_cleanup' EXIT

bench_header "Prediction acceptance: predict --tree --on, checked by copy/scan/rm --cold" \
    "CHECKS=$CHECKS MAX_TIME=$MAX_TIME TARGETS=\"$TARGETS\" bench/predict_check.sh ${TREES[*]}" \
    "$("$MF" --version)"

case_no=0
for target in $TARGETS; do
    dir=$WORK/t-$case_no
    if [ "$target" = disk ]; then
        dir=$DISK_WORK/t-$case_no
        mkdir -p "$dir"
    else
        mkdir -p "$dir"
        "$MF" mount "$target" "$dir" --size 2GiB >/dev/null
        mounted+=("$dir")
    fi
    for tree in "${TREES[@]}"; do
        case_no=$((case_no + 1))
        c=$OUT/c$case_no
        mkdir -p "$c"
        src=$dir/src
        cp -rL "$tree" "$src" 2>"$c/cp.err" || true # unreadable entries are skipped: the tree is what got copied
        sync
        echo "[$(date +%T)] $target: $tree: predict" >&2
        "$MF" predict --tree "$src" --on "$dir" --max-time "$MAX_TIME" --quiet \
            --json "$c/pred.json" --save-calibration "$c/cal.json" >"$c/pred.txt" 2>"$c/pred.err" ||
            { echo "predict failed: $(tail -1 "$c/pred.err")" >&2; rm -rf "$src"; continue; }
        for i in $(seq 1 "$CHECKS"); do
            "$MF" copy --cold --durable --json "$c/copy$i.json" "$src" "$dir/chk" >/dev/null 2>>"$c/chk.err" || true
            "$MF" scan --cold --json "$c/walk$i.json" "$dir/chk" >/dev/null 2>>"$c/chk.err" || true
            "$MF" rm --cold --durable --json "$c/rm$i.json" "$dir/chk" >/dev/null 2>>"$c/chk.err" || true
        done
        rm -rf "$src"
        printf '%s\t%s\n' "$target" "$tree" >"$c/case"
    done
    if [ "$target" != disk ]; then "$MF" umount "$dir" >/dev/null; fi
done
[ -n "${KEEP:-}" ] && cp -r "$OUT" "$KEEP"

python3 - "$OUT" <<'EOF'
import json, os, sys, statistics
out = sys.argv[1]
rows, errs, inside, widths = [], [], 0, []
label = {"copy": "copy", "walk": "scan", "rm": "rm"}
for c in sorted(os.listdir(out), key=lambda s: int(s[1:])):
    d = os.path.join(out, c)
    if not os.path.exists(os.path.join(d, "case")):
        continue
    target, tree = open(os.path.join(d, "case")).read().strip().split("\t")
    pred = json.load(open(os.path.join(d, "pred.json")))
    shape = pred["tree"]
    for p in pred["predictions"]:
        op = p["op"]
        if op not in label:
            continue
        runs = []
        for f in sorted(os.listdir(d)):
            if f.startswith(op) and f.endswith(".json"):
                j = json.load(open(os.path.join(d, f)))
                if j.get("elapsed_s"):
                    runs.append(j["elapsed_s"])
        s, iv = p["seconds"], p.get("interval95")
        if not runs or iv is None:
            continue
        e = [r / s - 1 for r in runs]
        ins = sum(1 for r in runs if iv[0] <= r <= iv[1])
        errs += [abs(x) for x in e]
        inside += ins
        widths.append(max(iv[1] / s - 1, 1 - iv[0] / s))
        out_flag = "" if not p.get("extrapolation") else " (outside)"
        rows.append(f"| {target} | {tree} ({shape['files']} files, {shape['dirs']} dirs) | {label[op]} | "
                    f"{s*1e3:.1f} ms ({iv[0]*1e3:.1f} – {iv[1]*1e3:.1f}){out_flag} | "
                    f"{', '.join(f'{r*1e3:.1f}' for r in runs)} | "
                    f"{statistics.median(e)*100:+.0f}% | {ins}/{len(runs)} |")
print("| target | tree | op | predicted (95% interval) | measured runs, ms | median error | inside |")
print("|---|---|---|---:|---:|---:|---:|")
print("\n".join(rows))
n = len(errs)
if n:
    print()
    print(f"- runs checked: {n}; median absolute error {statistics.median(errs)*100:.1f}% (target ≤ 15%)")
    print(f"- runs inside their 95% interval: {inside}/{n} = {inside/n*100:.0f}% (target ≥ 90%)")
    print(f"- interval half-widths (wider side): median {statistics.median(widths)*100:.0f}%, "
          f"{sum(1 for w in widths if w <= 0.30)}/{len(widths)} within ±30% (target: all)")
EOF
