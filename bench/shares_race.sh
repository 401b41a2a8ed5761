#!/usr/bin/env bash
# Issue 31's race on a file share: manyfiles' engines against the tools people use there,
# with many small files, at each round trip.
#
#   bench/shares_race.sh        (root: mounts; needs what `--fs share:` needs, see README)
#   N=10000 SIZE=4096 DIRS=100 RTTS="0 1 5" ROUNDS=3 PROTO=sftp JOBS="sync copy scan rm" MF_ARGS=
#
# For each RTT (ms): `manyfiles mount share:PROTO@rtt=RTTms DIR` (the export on tmpfs),
# then for each job ROUNDS rounds, each running the job's contenders once in a shuffled
# order (`shuf`):
#   sync   manyfiles sync SRC SAME --dry-run     rsync -an SRC/ SAME/      (SAME unchanged)
#   copy   manyfiles copy SRC DST                cpz SRC DST
#          rclone copy SRC DST (its defaults)    rclone copy SRC DST --transfers 16 --checkers 16
#   scan   manyfiles scan SAME (no index)        find SAME -printf '%s %T@ %p\n'
#   rm     manyfiles rm TREE                     rmz TREE
# SRC: N files of SIZE bytes in DIRS directories on local RAM (/dev/shm), mtimes in whole
# seconds (sftp carries no nanoseconds: an unchanged copy must compare equal). SAME, TREE
# and DST are paths through the share's client; every run gets a tree of its own, made
# (untimed) on the server's side of the share (`cp -a` into the export) under a name the
# client has never seen, so no run is answered from the client's caches (sshfs keeps what
# it listed for 20 s) nor from an earlier contender's. rclone copies to the mounted path
# (local backend), the same client as the others. Every run is checked (files copied,
# tree removed). manyfiles runs with its defaults (adaptive in-flight) and its JSON gives
# the in-flight it used (median/max of the limit; "peak": most batches at once).
# Times: wall of the whole command (bash EPOCHREALTIME), medians and min–max over the
# rounds; "× faster" is the contender's median over manyfiles' (> 1: manyfiles faster).
# The issue's targets are judged at RTT 1 ms only: sync -n ≥ 5× rsync -an, copy ≥ 2× cpz
# and ≥ 1× rclone at its better setting, scan ≥ 3× find -printf, rm ≥ 2× rmz.
# cpz and rmz (fuc) are installed when missing (`cargo install --locked cpz` / `rmz`, as
# bench/peers.sh does); rsync and rclone with apt-get. A missing contender is left out.
set -euo pipefail
shopt -s inherit_errexit
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=/dev/shm/mf-shares-race-$$
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
[ "$(id -u)" = 0 ] || { echo "shares_race: needs root (mounts)" >&2; exit 2; }
N=${N:-10000}
SIZE=${SIZE:-4096}
DIRS=${DIRS:-100}
RTTS=${RTTS:-"0 1 5"}
ROUNDS=${ROUNDS:-3}
PROTO=${PROTO:-sftp}
JOBS=${JOBS:-sync copy scan rm}
RAW=${RAW:-}
MF_ARGS=${MF_ARGS:-}  # extra arguments for every manyfiles contender (e.g. "--in-flight 16")
bench_setup
export PATH="$HOME/.cargo/bin:$PATH"
have() { command -v "$1" >/dev/null; }
for c in cpz rmz; do
    if ! have "$c"; then
        echo "installing $c (cargo install --locked)..." >&2
        cargo install --locked --quiet "$c" >&2 || echo "  $c could not be installed: left out" >&2
    fi
done
for c in rsync rclone; do
    if ! have "$c"; then
        echo "installing $c (apt-get)..." >&2
        (apt-get install -y -qq "$c" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$c"; }) >&2 ||
            echo "  $c could not be installed: left out" >&2
    fi
done
[ -x /usr/bin/time ] || (apt-get install -y -qq time >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time; }) >&2
bench_build
version() { if have "$1"; then "$1" --version 2>/dev/null | head -1 | tr -s ' '; else echo "$1: missing"; fi; }
bench_header "Shares: manyfiles against rsync, cpz, rclone, find and rmz" \
    "N=$N SIZE=$SIZE DIRS=$DIRS RTTS=\"$RTTS\" ROUNDS=$ROUNDS PROTO=$PROTO JOBS=\"$JOBS\"${MF_ARGS:+ MF_ARGS=\"$MF_ARGS\"} bench/shares_race.sh" \
    "$(version rsync); $(version cpz); $(version rmz); $(version rclone); $(find --version | head -1)"

SRC=$WORK/src
echo "making SRC: $N files of $SIZE B in $DIRS directories..." >&2
python3 - "$SRC" "$N" "$SIZE" "$DIRS" <<'EOF'
import os, sys
root, n, size, dirs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t = 1_700_000_000
for i in range(n):
    d = os.path.join(root, f"d{i % dirs:03d}")
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, f"f{i:07d}")
    with open(p, "wb") as f:
        f.write(os.urandom(size))
    os.utime(p, (t, t))
for d in os.listdir(root):
    os.utime(os.path.join(root, d), (t, t))
os.utime(root, (t, t))
EOF

contenders() {
    case "$1" in
        sync) echo mf-sync-n; have rsync && echo rsync-an ;;
        copy) echo mf-copy; have cpz && echo cpz; have rclone && { echo rclone; echo rclone-t16; } ;;
        scan) echo mf-scan; echo find-printf ;;
        rm) echo mf-rm; have rmz && echo rmz ;;
    esac
}

# in_flight JSON: "median/max peak P" of manyfiles' in-flight ("-" for a peer)
in_flight() {
    python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["in_flight"]; print("%s/%s/%s" % (f["median"], f["max"], f.get("peak", "-")))' "$1"
}

count_files() { find "$1" -type f | wc -l; }

raw=$WORK/raw.tsv
: >"$raw"
mounted=""
trap 'st=$?; if [ -n "$mounted" ]; then "$MF" umount "$mounted" >/dev/null 2>&1 || true; fi; (exit $st); bench_cleanup' EXIT
size_mib=$(( N * (SIZE + 4096) * 4 / 1048576 + 256 ))
k=0
for rtt in $RTTS; do
    mp=$WORK/m-$rtt
    mkdir -p "$mp"
    echo "[$(date +%T)] $PROTO rtt=${rtt}ms: mounting (export ${size_mib} MiB)" >&2
    "$MF" mount "share:$PROTO@rtt=${rtt}ms" "$mp" --size "${size_mib}MiB" >/dev/null
    mounted=$mp
    ex=$(export_of "$mp")
    # The server's side and the client's must be one tree.
    touch "$ex/.race-marker"
    [ -e "$mp/.race-marker" ] || { echo "shares_race: $ex is not what $mp shows" >&2; exit 1; }
    cp -a "$SRC" "$ex/same"
    for job in $JOBS; do
        mapfile -t cs < <(contenders "$job")
        for ((r = 1; r <= ROUNDS; r++)); do
            mapfile -t order < <(shuf -e "${cs[@]}")
            for c in "${order[@]}"; do
                k=$((k + 1))
                name=t$k
                # Each run's own tree, made on the server's side (untimed).
                case "$job" in sync|scan|rm) cp -a "$ex/same" "$ex/$name" ;; esac
                sync
                j=$WORK/mf.json
                rm -f "$j"
                case "$c" in
                    mf-sync-n) timed "$MF" sync "$SRC" "$mp/$name" --dry-run -q --json "$j" $MF_ARGS ;;
                    rsync-an) timed rsync -an "$SRC/" "$mp/$name/" ;;
                    mf-copy) timed "$MF" copy "$SRC" "$mp/$name" -q --json "$j" $MF_ARGS ;;
                    cpz) timed cpz "$SRC" "$mp/$name" ;;
                    rclone) timed rclone copy "$SRC" "$mp/$name" ;;
                    rclone-t16) timed rclone copy "$SRC" "$mp/$name" --transfers 16 --checkers 16 ;;
                    mf-scan) timed "$MF" scan "$mp/$name" --json "$j" $MF_ARGS ;;
                    find-printf) timed find "$mp/$name" -printf '%s %T@ %p\n' ;;
                    mf-rm) timed "$MF" rm "$mp/$name" -q --json "$j" $MF_ARGS ;;
                    rmz) timed rmz "$mp/$name" ;;
                esac
                read -r wall _ <"$WORK/last"
                case "$job" in
                    copy) got=$(count_files "$ex/$name")
                          [ "$got" = "$N" ] || { echo "$c copied $got of $N files" >&2; exit 1; } ;;
                    rm) [ ! -e "$ex/$name" ] || { echo "$c left $name" >&2; exit 1; } ;;
                esac
                if [ "$job" = sync ] && [ "$c" = mf-sync-n ]; then
                    would=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["copied"])' "$j")
                    [ "$would" = 0 ] || { echo "sync --dry-run saw $would files changed in an unchanged copy" >&2; exit 1; }
                fi
                fl=-
                if [ -s "$j" ]; then fl=$(in_flight "$j"); fi
                rm -rf "${ex:?}/$name"
                printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$rtt" "$job" "$r" "$c" "$wall" "$fl" >>"$raw"
                echo "  rtt=$rtt $job round $r $c: ${wall}s in flight $fl" >&2
            done
        done
    done
    "$MF" umount "$mp" >/dev/null
    mounted=""
done
if [ -n "$RAW" ]; then cp "$raw" "$RAW"; fi

python3 - "$raw" <<'EOF'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
# rtt, job, round, contender, wall, in-flight (median/max/peak)
targets = {("sync", "rsync-an"): 5.0, ("copy", "cpz"): 2.0, ("copy", "rclone-best"): 1.0,
           ("scan", "find-printf"): 3.0, ("rm", "rmz"): 2.0}
print("| RTT ms | job | contender | median s | min–max s | runs | manyfiles in flight (median/max/peak) | manyfiles × faster | target (RTT 1 ms) | result |")
print("|---:|---|---|---:|---:|---:|---|---:|---:|---|")
for rtt in dict.fromkeys(r[0] for r in rows):
    for job in dict.fromkeys(r[1] for r in rows if r[0] == rtt):
        by = {}
        for r in rows:
            if r[0] == rtt and r[1] == job:
                by.setdefault(r[3], []).append(r)
        med = {c: st.median(float(x[4]) for x in v) for c, v in by.items()}
        mine = [c for c in by if c.startswith("mf-")][0]
        if "rclone" in med and "rclone-t16" in med:
            best = min(("rclone", "rclone-t16"), key=lambda c: med[c])
            by["rclone-best"] = by[best]
            med["rclone-best"] = med[best]
        for c, v in by.items():
            walls = [float(x[4]) for x in v]
            fl = ", ".join(x[5] for x in v) if c.startswith("mf-") else ""
            cells = [rtt, job, c + (f" (= {best})" if c == "rclone-best" else ""), f"{med[c]:.3f}",
                     f"{min(walls):.3f}–{max(walls):.3f}", str(len(v)), fl]
            if c == mine:
                cells += ["", "", ""]
            else:
                x = med[c] / med[mine]
                t = targets.get((job, c)) if rtt == "1" else None
                cells += [f"**{x:.2f}**", f"≥ {t}" if t else "", ("PASS" if x >= t else "**MISS**") if t else ""]
            print("| " + " | ".join(cells) + " |")
EOF
