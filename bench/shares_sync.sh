#!/usr/bin/env bash
# Issue 31's azcopy experiment on its storage: sync between two file shares, each a real
# server and client with a chosen round trip, at several file counts.
#
#   bench/shares_sync.sh        (root: mounts; needs what `--fs share:` needs, see README)
#   NS="1000 10000 100000" SIZE=65536 PER_DIR=1000 RTTS="1 5" PROTO=sftp CHANGED=1 INTERVAL=15m
#   LADDER=1 (a sync ladder on the share first, for `predict --interval`; 0: none)
#   LADDER_TO=4096 LADDER_TOTAL=256MiB (its rungs)
#
# The published experiment (DESIGN.md): azcopy sync of 1 k … 1 M files of 1 MB between two
# cloud SMB shares: 1 M files took 13m52s to compare and copy, 25m12s to compare alone.
# Scaled here: files of SIZE (64 KiB: 1/16 of the published size, so a 100,000-file tree
# fits two RAM-backed exports) in directories of PER_DIR files.
#
# For each RTT (ms): two shares, `manyfiles mount share:PROTO@rtt=RTTms A` and `… B`
# (each its own server, proxy and client; exports on tmpfs). For each N:
#   1. SRC made on A's server side (untimed): N files of SIZE, whole-second mtimes;
#   2. full:     manyfiles sync A/t B/t          (B/t new: every file copied);
#   3. compare:  manyfiles sync A/t B/t --dry-run (unchanged: nothing to copy);
#   4. changed:  CHANGED % of the files rewritten on A's server side (same size, new
#                bytes, mtime + 100 s), then manyfiles sync A/t B/t (copies just those).
# Before every step the clients' caches are emptied: sshfs keeps listings 20 s
# (dcache_timeout=20), so the script waits 21 s and drops the kernel's caches; each step
# therefore pays its round trips as a first look would. Every step is checked (files on B's
# server side, the JSON's copied count), its progress lines (every 2 s, stderr) are kept,
# and its time is the wall time of the command (single runs: the 100,000-file steps take
# minutes; say so beside any ratio).
# With LADDER=1, a ladder with sync, sync-nochange and sync-change:CHANGED on share A
# first (`--to LADDER_TO --total LADDER_TOTAL`: 64 KiB at the top rung by default) gives the models
# `predict --model … --tree A/t --interval INTERVAL` uses; its prediction for each step
# (and the recovery point: interval + sync time) is printed beside what was measured.
set -euo pipefail
shopt -s inherit_errexit
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=/dev/shm/mf-shares-sync-$$
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
[ "$(id -u)" = 0 ] || { echo "shares_sync: needs root (mounts)" >&2; exit 2; }
NS=${NS:-1000 10000 100000}
SIZE=${SIZE:-65536}
PER_DIR=${PER_DIR:-1000}
RTTS=${RTTS:-1 5}
PROTO=${PROTO:-sftp}
CHANGED=${CHANGED:-1}
INTERVAL=${INTERVAL:-15m}
LADDER=${LADDER:-1}
LADDER_TO=${LADDER_TO:-4096}
LADDER_TOTAL=${LADDER_TOTAL:-256MiB}
LOGS=${LOGS:-}  # keep the progress logs and JSON here
bench_setup
[ -x /usr/bin/time ] || (apt-get install -y -qq time >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time; }) >&2
bench_build
bench_header "Shares: the azcopy experiment (sync between two shares)" \
    "NS=\"$NS\" SIZE=$SIZE PER_DIR=$PER_DIR RTTS=\"$RTTS\" PROTO=$PROTO CHANGED=$CHANGED INTERVAL=$INTERVAL LADDER=$LADDER bench/shares_sync.sh" \
    "$(ssh -V 2>&1 | head -1); $(sshfs --version 2>&1 | head -1)"

max_n=0
for n in $NS; do [ "$n" -gt "$max_n" ] && max_n=$n; done
size_mib=$(( max_n * (SIZE + 4096) * 5 / 4 / 1048576 + 512 ))

# make_tree DIR N: N files of SIZE in directories of PER_DIR, mtimes in whole seconds
# (sftp carries no nanoseconds). Each file's bytes differ (a counter in a random block).
make_tree() {
    python3 - "$1" "$2" "$SIZE" "$PER_DIR" <<'EOF'
import os, sys
root, n, size, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t = 1_700_000_000
block = bytearray(os.urandom(size))
for i in range(n):
    d = os.path.join(root, f"d{i // per:04d}")
    if i % per == 0:
        os.makedirs(d)
    p = os.path.join(d, f"f{i:07d}")
    block[:8] = i.to_bytes(8, "little")
    with open(p, "wb") as f:
        f.write(block)
    os.utime(p, (t, t))
for d in os.listdir(root):
    os.utime(os.path.join(root, d), (t, t))
os.utime(root, (t, t))
EOF
}

# change_tree DIR PCT: every (100/PCT)-th file rewritten (same size, new bytes, mtime + 100 s);
# prints how many.
change_tree() {
    python3 - "$1" "$2" <<'EOF'
import os, sys
root, pct = sys.argv[1], float(sys.argv[2])
step = max(1, round(100 / pct))
k = 0
t = 1_700_000_100
for d in sorted(os.listdir(root)):
    for name in sorted(os.listdir(os.path.join(root, d))):
        i = int(name[1:])
        if i % step == 0:
            p = os.path.join(root, d, name)
            size = os.path.getsize(p)
            with open(p, "r+b") as f:
                f.write(os.urandom(min(size, 4096)))
            os.utime(p, (t, t))
            k += 1
print(k)
EOF
}

# Empty the clients' caches: sshfs's listings (20 s), then the kernel's.
cold() { sleep 21; sync; echo 3 >/proc/sys/vm/drop_caches; }

copied_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["copied"])' "$1"; }
inflight_of() {
    python3 -c 'import json,sys; f=json.load(open(sys.argv[1])).get("in_flight") or {}; print("%s/%s" % (f.get("median","-"), f.get("max","-")))' "$1"
}
# The progress lines a step printed (every 2 s): how many, and the last one.
progress_of() {
    local n
    n=$(grep -c '% of ' "$1" || true)
    echo "$n lines"
}

mounted=()
umount_all() {
    local m
    for m in "${mounted[@]}"; do "$MF" umount "$m" >/dev/null 2>&1 || true; done
    mounted=()
}
trap 'st=$?; umount_all; (exit $st); bench_cleanup' EXIT
logs=${LOGS:-$WORK/logs}
mkdir -p "$logs"
rows=$logs/rows.tsv  # kept with the logs: the table can be made again from it
: >"$rows"

for rtt in $RTTS; do
    a=$WORK/a-$rtt b=$WORK/b-$rtt
    mkdir -p "$a" "$b"
    echo "[$(date +%T)] $PROTO rtt=${rtt}ms: mounting two shares (exports ${size_mib} MiB each)" >&2
    "$MF" mount "share:$PROTO@rtt=${rtt}ms" "$a" --size "${size_mib}MiB" >/dev/null
    mounted+=("$a")
    "$MF" mount "share:$PROTO@rtt=${rtt}ms" "$b" --size "${size_mib}MiB" >/dev/null
    mounted+=("$b")
    ea=$(export_of "$a") eb=$(export_of "$b")
    [ "$ea" != "$eb" ] || { echo "shares_sync: A and B share one export" >&2; exit 1; }
    model=""
    if [ "$LADDER" = 1 ]; then
        model=$logs/ladder-$rtt.json
        echo "[$(date +%T)] rtt=${rtt}ms: sync ladder on A (for predict)" >&2
        "$MF" ladder --target "$a" --to "$LADDER_TO" --total "$LADDER_TOTAL" --second-total off \
            --ops "create,sync,sync-nochange,sync-change:$CHANGED" --max-time 4m -q --json "$model" \
            >"$logs/ladder-$rtt.txt" 2>&1 || { echo "  ladder failed: see $logs/ladder-$rtt.txt; no prediction" >&2; model=""; }
    fi
    for n in $NS; do
        name=t$n
        echo "[$(date +%T)] rtt=${rtt}ms N=$n: making the tree on A's server side" >&2
        make_tree "$ea/$name" "$n"
        pred=$logs/predict-$rtt-$n.json
        if [ -n "$model" ]; then
            "$MF" predict --model "$model" --tree "$a/$name" --interval "$INTERVAL" --json "$pred" \
                >"$logs/predict-$rtt-$n.txt" 2>&1 || rm -f "$pred"
        fi
        for step in full compare changed; do
            want=$n
            args=()
            case $step in
                compare) want=0; args=(--dry-run) ;;
                changed) want=$(change_tree "$ea/$name" "$CHANGED") ;;
            esac
            cold
            j=$logs/$step-$rtt-$n.json
            log=$logs/$step-$rtt-$n.log
            echo "[$(date +%T)] rtt=${rtt}ms N=$n: $step" >&2
            timed "$MF" sync "$a/$name" "$b/$name" "${args[@]}" --json "$j" 2>"$log"
            read -r wall _ <"$WORK/last"
            got=$(copied_of "$j")
            [ "$got" = "$want" ] || { echo "shares_sync: $step copied $got, expected $want" >&2; exit 1; }
            if [ "$step" = full ]; then
                on_b=$(find "$eb/$name" -type f | wc -l)
                [ "$on_b" = "$n" ] || { echo "shares_sync: B holds $on_b of $n files" >&2; exit 1; }
            fi
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rtt" "$n" "$step" "$wall" "$got" \
                "$(inflight_of "$j")" "$(progress_of "$log")" "$pred" >>"$rows"
            echo "  ${wall}s, copied $got, $(progress_of "$log")" >&2
        done
        rm -rf "${ea:?}/$name" "${eb:?}/$name"
    done
    umount_all
done

python3 - "$rows" "$SIZE" "$INTERVAL" <<'EOF'
import json, os, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
size, interval = int(sys.argv[2]), sys.argv[3]
op = {"full": "sync", "compare": "sync-nochange", "changed": "sync-change"}
def predicted(path, step):
    if not path or not os.path.exists(path):
        return "—", "—"
    d = json.load(open(path))
    for p in d.get("predictions", []):
        if p.get("op", "").split(":")[0] == op[step]:
            lo, hi = (p.get("interval95") or [None, None])
            rp = p.get("recovery_point_s")
            pr = f"{p['seconds']:.2f}" + (f" [{lo:.2f}–{hi:.2f}]" if lo is not None else "")
            if p.get("reach", {}).get("outside"):
                pr += " ⚠ outside"
            return pr, (f"{rp[0]:.0f} (up to {rp[1]:.0f})" if rp else "—")
    return "—", "—"
print(f"| RTT ms | files ({size // 1024} KiB) | sync | time s | files copied | in flight (median/max) | progress | predicted s [95%] | recovery point s, interval {interval} |")
print("|---:|---:|---|---:|---:|---|---|---|---|")
for rtt, n, step, wall, got, fl, prog, pred in rows:
    pr, rp = predicted(pred, step)
    print(f"| {rtt} | {int(n):,} | {step} | {float(wall):.2f} | {got} | {fl} | {prog} | {pr} | {rp} |")
EOF
