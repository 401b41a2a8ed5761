#!/usr/bin/env bash
# Issue 43, item 6: `predict --tree TREE --fs SPEC` onto an object store, then the check it
# prints, run ROUNDS times as printed (the mount, upload, scan, download, rm, umount
# lines), every engine's JSON kept. Per command: the predicted requests against the
# requests the engine reports (they must be equal, kind by kind), and the predicted time
# and interval against each measured run.
#
#   bench/predict_objects.sh [TREE]        default TREE: a copy of /usr/share/doc
#   SPEC=s3@rtt=1ms ROUNDS=3 MAX_TIME=180s MF_BIN=target/release/manyfiles (built already)
#   ALLOW_DEBUG=1 with a debug MF_BIN (session 25's first figures were a debug build's)
#
# Root (the store's mount). Output: Markdown on stdout; raw files in $KEEP if set.
set -euo pipefail
shopt -s inherit_errexit
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=/var/tmp/mf-predict-objects-$$
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
[ "$(id -u)" = 0 ] || { echo "predict_objects: needs root (the store's mount)" >&2; exit 2; }
SPEC=${SPEC:-s3@rtt=1ms}
ROUNDS=${ROUNDS:-3}
MAX_TIME=${MAX_TIME:-180s}
bench_setup
# A check that failed half-way leaves its store mounted: its own umount lines run on exit.
undo_check() {
    local rc=$?
    set +e
    if [ -f "$WORK/check.sh" ]; then
        grep '^manyfiles umount ' "$WORK/check.sh" | while read -r line; do sh -c "$line" >/dev/null 2>&1; done
        grep '^manyfiles rm /' "$WORK/check.sh" | while read -r line; do sh -c "$line" >/dev/null 2>&1; done
    fi
    (exit $rc)
    bench_cleanup
}
trap undo_check EXIT
if [ -n "${MF_BIN:-}" ]; then
    refuse_debug_build "$MF_BIN"
    cp "$MF_BIN" "$WORK/manyfiles"
    MF=$WORK/manyfiles
else
    bench_build
fi
# The check lines call `manyfiles`: this build first on PATH.
export PATH="$(dirname "$MF"):$PATH"
[ "$(basename "$MF")" = manyfiles ] || { ln -sf "$MF" "$WORK/manyfiles"; export PATH="$WORK:$PATH"; }
TREE=${1:-}
if [ -z "$TREE" ]; then
    TREE=$WORK/doc
    cp -a /usr/share/doc "$TREE"
fi
bench_header "predict onto an object store, checked as printed" \
    "SPEC=$SPEC ROUNDS=$ROUNDS MAX_TIME=$MAX_TIME bench/predict_objects.sh ${1:-}" \
    "tree $TREE"
cd "$WORK"
echo "[$(date +%T)] predict --tree $TREE --fs $SPEC --max-time $MAX_TIME" >&2
manyfiles predict --tree "$TREE" --fs "$SPEC" --max-time "$MAX_TIME" --quiet --json predict.json --force >predict.txt 2>&1
# The printed check: its command lines, as a user would paste them.
sed -n '/^check, one run each/,$p' predict.txt | sed -n 's/^  \(mkdir\|manyfiles\|rmdir\)/\1/p' >check.sh
[ -s check.sh ] || { echo "predict printed no check:" >&2; cat predict.txt >&2; exit 1; }
for ((round = 1; round <= ROUNDS; round++)); do
    n=0
    while IFS= read -r line; do
        case "$line" in
            *" s3://"*)
                n=$((n + 1))
                echo "[$(date +%T)] round $round: $line" >&2
                q=" --quiet" # scan has no --quiet (it prints a summary only)
                case "$line" in "manyfiles scan"*) q="" ;; esac
                sh -c "$line$q --json r$round-c$n.json --force" >"r$round-c$n.txt" 2>&1 ;;
            *) sh -c "$line" >/dev/null ;;
        esac
    done <check.sh
done
cat predict.txt
echo
python3 - "$ROUNDS" <<'EOF'
import json, statistics as st, sys
rounds = int(sys.argv[1])
p = json.load(open("predict.json"))["objects"]
cmds = p["commands"]
print("| command | requests predicted | requests measured (every round) | predicted s [interval] | measured s | inside |")
print("|---|---|---|---:|---|---|")
for i, c in enumerate(cmds, 1):
    want = {k: v for k, v in c["requests"].items() if v}
    got, secs = [], []
    for r in range(1, rounds + 1):
        j = json.load(open(f"r{r}-c{i}.json"))
        got.append({k: v for k, v in j["requests"].items() if v})
        secs.append(j.get("elapsed_s", float("nan")))
    same = all(g == want for g in got)
    t = c.get("time")
    if t:
        lo, hi = t["interval95"]
        inside = sum(lo <= s <= hi for s in secs)
        pred = f"{t['seconds']:.2f} [{lo:.2f}–{hi:.2f}]"
        ins = f"{inside} of {len(secs)}"
    else:
        pred, ins = "no time", ""
    print(f"| {c['command']} | {want} | {'equal' if same else got} | {pred} | {' / '.join(f'{s:.2f}' for s in secs)} | {ins} |")
EOF
