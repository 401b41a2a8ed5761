#!/usr/bin/env bash
# A ladder on each storage kind, two builds interleaved: is the newer as fast on every kind?
#
#   bench/kinds_ab.sh OLD_BIN NEW_BIN [ROUNDS]      (root; KINDS=... to choose kinds)
#
# Per round, every kind runs OLD then NEW (NEW then OLD on odd rounds): a small ladder
# (--total 4MiB --to 256 --runs 3, create/read/delete) with its JSON kept. Per kind it
# prints the medians over rounds of (a) the sum of the ladder's per-cell median times
# (what the ladder measured: the storage plus the tool's own per-op cost) and (b) the
# whole process's wall time (format, trials, teardown), and the per-round ratios
# NEW/OLD: median and min…max. A ratio range that contains 1 is "within noise".
set -euo pipefail
OLD=$1 NEW=$2 ROUNDS=${3:-3}
KINDS=${KINDS:-"dir:/dev/shm tmpfs ext4@ram xfs@ram btrfs@ram ext4@class:ebs-gp2 share:sftp@rtt=1ms"}
WORK=/dev/shm/kinds-ab-$$
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
args=(--total 4MiB --to 256 --runs 3 -q)
one() { # one BIN KIND OUT → wall seconds on stdout
    local bin=$1 kind=$2 out=$3 t0 t1 where
    if [[ $kind == dir:* ]]; then where=(--target "${kind#dir:}"); else where=(--fs "$kind"); fi
    t0=$EPOCHREALTIME
    "$bin" ladder "${where[@]}" "${args[@]}" --json "$out" >"$out.log" 2>&1 || { echo "failed: $bin $kind (see $out.log)" >&2; cat "$out.log" >&2; exit 1; }
    t1=$EPOCHREALTIME
    echo "$t1 - $t0" | bc -l
}
for r in $(seq 1 "$ROUNDS"); do
    for k in $KINDS; do
        order=(old new); (( r % 2 == 0 )) && order=(new old)
        for which in "${order[@]}"; do
            bin=$OLD; [[ $which == new ]] && bin=$NEW
            f="$WORK/$which-$r-${k//[^a-z0-9]/_}.json"
            wall=$(one "$bin" "$k" "$f")
            sum=$(jq '[.summaries[].median_s] | add' "$f")
            echo "$k $which $r $sum $wall" >>"$WORK/rows"
        done
    done
    echo "round $r done" >&2
done
python3 - "$WORK/rows" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
kinds = list(dict.fromkeys(r[0] for r in rows))
print("| kind | measured, old (s) | measured, new (s) | ratio new/old (min…max) | wall old (s) | wall new (s) | wall ratio (min…max) |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for k in kinds:
    get = lambda w, i: {r[2]: float(r[i]) for r in rows if r[0] == k and r[1] == w}
    mo, mn, wo, wn = get("old", 3), get("new", 3), get("old", 4), get("new", 4)
    rm = [mn[r] / mo[r] for r in mo]; rw = [wn[r] / wo[r] for r in wo]
    f = lambda x: f"{x:.3f}"
    print(f"| {k} | {f(st.median(mo.values()))} | {f(st.median(mn.values()))} | {st.median(rm):.2f} ({min(rm):.2f}…{max(rm):.2f}) | {st.median(wo.values()):.1f} | {st.median(wn.values()):.1f} | {st.median(rw):.2f} ({min(rw):.2f}…{max(rw):.2f}) |")
PY
