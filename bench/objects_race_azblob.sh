#!/usr/bin/env bash
# Issue 43's race on Azure Blob: manyfiles' object engines (`azblob://`) against rclone's
# azureblob backend, with many small objects, on Azurite at RTT 1 ms (the sibling of
# bench/objects_race.sh, which races on S3).
#
#   bench/objects_race_azblob.sh   (root: mounts; needs what `--fs azblob` needs, see README)
#   N=10000 SIZE=4096 DIRS=100 RTT=1 ROUNDS=3 TRANSFERS="4 16 64" JOBS="upload download sync rm" MF_ARGS=
#   MF_BIN=target/release/manyfiles   (a release binary built already: no build here)
#
# `manyfiles mount azblob@rtt=RTTms DIR` (Azurite storing on tmpfs), then for each job
# ROUNDS rounds, each running the job's contenders once in a shuffled order (`shuf`):
#   upload    manyfiles copy SRC azblob://manyfiles/uK     rclone copy SRC mfaz:manyfiles/uK --transfers T --checkers T
#   download  manyfiles copy azblob://manyfiles/same DST   rclone copy mfaz:manyfiles/same DST --transfers T --checkers T
#   sync      manyfiles sync -n SRC azblob://manyfiles/same   rclone sync --dry-run SRC mfaz:manyfiles/same --checkers T
#   rm        manyfiles rm azblob://manyfiles/rK           rclone delete mfaz:manyfiles/rK --checkers T
# for each T in TRANSFERS. SRC: N files of SIZE bytes in DIRS directories on local RAM.
# manyfiles reaches the store with `--store-via DIR`; rclone (Debian's 1.60) runs under
# `nsenter --net=` into the stack's namespace, its azureblob remote given in the
# environment: rclone 1.60 reaches an account by key only at https://ACCOUNT.SUFFIX, so
# it gets a SAS URL of the stack's endpoint, an account SAS signed once with the key
# from the stack's 0600 connection string (bench/azure_account_sas.py; neither is
# written to a file nor on a command line). Every
# rm run gets a prefix of its own, uploaded (untimed) by manyfiles. Every run is checked
# (objects uploaded, files downloaded, nothing left after rm, nothing to do for sync).
# Times: wall of the whole command, medians and min–max over the rounds; "× faster" is
# rclone's median at its best T over manyfiles' (> 1: manyfiles faster). Targets (issue
# 43, "the same on Azurite against rclone"): upload, download and rm ≥ 2× rclone at its
# best — rm against `rclone delete` as on S3 (`rclone purge` of a prefix is the same
# deletes and a directory pass). manyfiles writes a file's mtime as rclone's azureblob
# backend does (metadata `mtime`, RFC 3339), so rclone's sync --dry-run of manyfiles'
# upload has nothing to do either. On a shared machine the figures are noisy.
set -euo pipefail
shopt -s inherit_errexit
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=/dev/shm/mf-objects-race-azblob-$$
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
[ "$(id -u)" = 0 ] || { echo "objects_race_azblob: needs root (mounts)" >&2; exit 2; }
N=${N:-10000}
SIZE=${SIZE:-4096}
DIRS=${DIRS:-100}
RTT=${RTT:-1}
ROUNDS=${ROUNDS:-3}
TRANSFERS=${TRANSFERS:-4 16 64}
JOBS=${JOBS:-upload download sync rm}
RAW=${RAW:-}
MF_ARGS=${MF_ARGS:-}
bench_setup
have() { command -v "$1" >/dev/null; }
if ! have rclone; then
    echo "installing rclone (apt-get)..." >&2
    (apt-get install -y -qq rclone >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq rclone; }) >&2
fi
if [ -n "${MF_BIN:-}" ]; then
    refuse_debug_build "$MF_BIN"
    cp "$MF_BIN" "$WORK/manyfiles"
    MF=$WORK/manyfiles
else
    bench_build
fi
bench_header "Azure Blob (Azurite): manyfiles against rclone" \
    "N=$N SIZE=$SIZE DIRS=$DIRS RTT=$RTT ROUNDS=$ROUNDS TRANSFERS=\"$TRANSFERS\" JOBS=\"$JOBS\" bench/objects_race_azblob.sh" \
    "$(rclone --version 2>/dev/null | head -1), $(azurite-blob --version 2>/dev/null | head -1 | sed 's/^/azurite /')"

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
EOF

mp=$WORK/store
mkdir -p "$mp"
# The store down and WORK removed on every exit path (the script's status kept).
trap 'set +e; "$MF" umount "$mp" >/dev/null 2>&1; rm -rf "$WORK"' EXIT
size_mib=$(( N * (SIZE + 2048) * 6 / 1048576 + 256 ))
echo "[$(date +%T)] azblob rtt=${RTT}ms: mounting (${size_mib} MiB)" >&2
printed=$("$MF" mount "azblob@rtt=${RTT}ms" "$mp" --size "${size_mib}MiB")
ns=$(sed -n 's/.*nsenter --net=\([^ ]*\).*/\1/p' <<<"$printed" | head -1)
conn=$(sed -n "s/^connection string (account key, root's): \([^ ]*\).*/\1/p" <<<"$printed" | head -1)
endpoint=$(sed -n 's/^blob store: endpoint \([^ ]*\).*/\1/p' <<<"$printed" | head -1)
[ -n "$ns" ] && [ -n "$conn" ] && [ -n "$endpoint" ] || { echo "objects_race_azblob: mount printed no endpoint: $printed" >&2; exit 1; }
mf() { "$MF" "$@" --store-via "$mp"; }
# rclone as a program (timed runs it through /usr/bin/time): in the stack's namespace,
# its azureblob remote `mfaz` from the environment. rclone 1.60 takes an account and key
# only for https://ACCOUNT.SUFFIX, so it gets a SAS URL of the stack's path-style http
# endpoint: an account SAS signed with the stack's key, made once here, untimed
# (bench/azure_account_sas.py), and handed down in this script's environment (the key
# and the SAS are written to no file).
MFAZ_SAS_URL=$(python3 "$ROOT/bench/azure_account_sas.py" "$conn" "$endpoint")
export MFAZ_SAS_URL
cat >"$WORK/rc" <<RC
#!/bin/sh
exec nsenter --net="$ns" env RCLONE_CONFIG_MFAZ_TYPE=azureblob RCLONE_CONFIG_MFAZ_SAS_URL="\$MFAZ_SAS_URL" rclone -q "\$@"
RC
chmod 700 "$WORK/rc"
rc=$WORK/rc
via=(--store-via "$mp")
objects() { mf scan "azblob://manyfiles/$1" --json "$WORK/scan.json" --force >/dev/null
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["objects"])' "$WORK/scan.json"; }
mf copy "$SRC" azblob://manyfiles/same -q >/dev/null

contenders() {
    echo "mf-$1"
    for t in $TRANSFERS; do echo "rclone-t$t"; done
}

raw=$WORK/raw.tsv
: >"$raw"
k=0
for job in $JOBS; do
    mapfile -t cs < <(contenders "$job")
    for ((r = 1; r <= ROUNDS; r++)); do
        mapfile -t order < <(shuf -e "${cs[@]}")
        for c in "${order[@]}"; do
            k=$((k + 1))
            t=${c#rclone-t}
            dst=$WORK/down$k
            [ "$job" = rm ] && mf copy "$SRC" "azblob://manyfiles/r$k" -q >/dev/null
            sync
            j=$WORK/mf.json
            rm -f "$j"
            case "$job/$c" in
                upload/mf-*) timed "$MF" copy "$SRC" "azblob://manyfiles/u$k" "${via[@]}" -q --json "$j" $MF_ARGS ;;
                upload/*) timed "$rc" copy "$SRC" "mfaz:manyfiles/u$k" --transfers "$t" --checkers "$t" ;;
                download/mf-*) timed "$MF" copy azblob://manyfiles/same "$dst" "${via[@]}" -q --json "$j" $MF_ARGS ;;
                download/*) timed "$rc" copy mfaz:manyfiles/same "$dst" --transfers "$t" --checkers "$t" ;;
                sync/mf-*) timed "$MF" sync -n "$SRC" azblob://manyfiles/same "${via[@]}" -q --json "$j" $MF_ARGS ;;
                sync/*) timed "$rc" sync --dry-run "$SRC" mfaz:manyfiles/same --checkers "$t" ;;
                rm/mf-*) timed "$MF" rm "azblob://manyfiles/r$k" "${via[@]}" -q --json "$j" $MF_ARGS ;;
                rm/*) timed "$rc" delete "mfaz:manyfiles/r$k" --checkers "$t" ;;
            esac
            read -r wall _ <"$WORK/last"
            case "$job" in
                upload) got=$(objects "u$k"); [ "$got" = "$N" ] || { echo "$c uploaded $got of $N" >&2; exit 1; }
                        mf rm "azblob://manyfiles/u$k" -q >/dev/null ;;
                download) got=$(find "$dst" -type f | wc -l); [ "$got" = "$N" ] || { echo "$c downloaded $got of $N" >&2; exit 1; }
                          rm -rf "$dst" ;;
                rm) got=$(objects "r$k"); [ "$got" = 0 ] || { echo "$c left $got objects" >&2; exit 1; } ;;
                sync) if [ -s "$j" ]; then
                          would=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["copied"])' "$j")
                          [ "$would" = 0 ] || { echo "sync -n saw $would changed" >&2; exit 1; }
                      fi ;;
            esac
            printf '%s\t%s\t%s\t%s\n' "$job" "$r" "$c" "$wall" >>"$raw"
            echo "  $job round $r $c: ${wall}s" >&2
        done
    done
done
if [ -n "$RAW" ]; then cp "$raw" "$RAW"; fi

python3 - "$raw" <<'EOF'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
# Issue 43's targets: against rclone at its best T.
targets = {"rclone": {"upload": 2.0, "download": 2.0, "rm": 2.0}}
print("| job | contender | median s | min–max s | runs | manyfiles × faster | target | result |")
print("|---|---|---:|---:|---:|---:|---:|---|")
for job in dict.fromkeys(r[0] for r in rows):
    by = {}
    for r in rows:
        if r[0] == job:
            by.setdefault(r[2], []).append(float(r[3]))
    med = {c: st.median(v) for c, v in by.items()}
    mine = [c for c in by if c.startswith("mf-")][0]
    rclones = [c for c in by if c.startswith("rclone-")]
    best = min(rclones, key=lambda c: med[c]) if rclones else None
    for c, v in by.items():
        cells = [job, c + (" (rclone's best)" if c == best else ""), f"{med[c]:.3f}", f"{min(v):.3f}–{max(v):.3f}", str(len(v))]
        if c == mine:
            cells += ["", "", ""]
        else:
            x = med[c] / med[mine]
            t = targets["rclone"].get(job) if c == best else None
            cells += [f"**{x:.2f}**", f"≥ {t}" if t else "", ("PASS" if x >= t else "**MISS**") if t else ""]
        print("| " + " | ".join(cells) + " |")
EOF
