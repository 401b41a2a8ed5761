#!/usr/bin/env bash
# Issue 43's race on an object store: manyfiles' object engines against rclone, with many
# small objects, at RTT 1 ms.
#
#   bench/objects_race.sh        (root: mounts; needs what `--fs s3` needs, see README)
#   N=10000 SIZE=4096 DIRS=100 RTT=1 ROUNDS=3 TRANSFERS="4 16 64" JOBS="upload download sync rm" MF_ARGS=
#   MF_BIN=target/release/manyfiles   (a release binary built already: no build here)
#
# `manyfiles mount s3@rtt=RTTms DIR` (the server storing on tmpfs), then for each job
# ROUNDS rounds, each running the job's contenders once in a shuffled order (`shuf`):
#   upload    manyfiles copy SRC s3://manyfiles/uK     rclone copy SRC mfs3:manyfiles/uK --transfers T --checkers T
#   download  manyfiles copy s3://manyfiles/same DST   rclone copy mfs3:manyfiles/same DST --transfers T --checkers T
#   sync      manyfiles sync -n SRC s3://manyfiles/same   rclone sync --dry-run SRC mfs3:manyfiles/same --checkers T
#   rm        manyfiles rm s3://manyfiles/rK           rclone delete mfs3:manyfiles/rK --checkers T
# for each T in TRANSFERS; and with AWS=1 (the default when `aws` is on PATH) the AWS CLI
# (`pip install awscli`, its default 10 requests in flight) as a third contender:
#   upload `aws s3 sync SRC s3://manyfiles/uK`, download `aws s3 sync s3://manyfiles/same DST`,
#   sync `aws s3 sync --dryrun SRC s3://manyfiles/same`, rm `aws s3 rm --recursive s3://manyfiles/rK`
# (issue 43's targets against it: ≥ 5× for upload, download and the dry run). SRC: N files of SIZE bytes in DIRS directories on local RAM.
# manyfiles reaches the store with `--s3-via DIR`; rclone (Debian's 1.60: a client only)
# runs under `nsenter --net=` into the stack's namespace, its S3 remote given in the
# environment (provider Other, env_auth from the stack's credentials file, path style;
# AWS_CA_BUNDLE unset: rclone 1.60 fails with it). Every rm run gets a prefix of its own,
# uploaded (untimed) by manyfiles. Every run is checked (objects uploaded, files
# downloaded, nothing left after rm, nothing to do for sync). Times: wall of the whole
# command, medians and min–max over the rounds; "× faster" is rclone's median at its best
# T over manyfiles' (> 1: manyfiles faster). Targets (issue 43): upload and download
# ≥ 2× rclone at its best, rm ≥ 2× rclone purge — here `rclone delete`: purge ends in a
# 501 NotImplemented from gofakes3 (checked by hand, 2026-11-28), delete removes the same
# objects. rclone reads manyfiles' `x-amz-meta-mtime` (and manyfiles rclone's), so its
# sync --dry-run of manyfiles' upload checks and sends nothing. On a shared machine the
# figures are noisy.
set -euo pipefail
shopt -s inherit_errexit
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=/dev/shm/mf-objects-race-$$
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
[ "$(id -u)" = 0 ] || { echo "objects_race: needs root (mounts)" >&2; exit 2; }
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
AWS=${AWS:-$(have aws && echo 1 || echo 0)}
# The AWS CLI itself, not pyenv's shim in front of it (0.1–0.3 s a start).
AWS_BIN=$(pyenv which aws 2>/dev/null || command -v aws || true)
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
bench_header "Object store: manyfiles against rclone" \
    "N=$N SIZE=$SIZE DIRS=$DIRS RTT=$RTT ROUNDS=$ROUNDS TRANSFERS=\"$TRANSFERS\" JOBS=\"$JOBS\" bench/objects_race.sh" \
    "$(rclone --version 2>/dev/null | head -1)${AWS_BIN:+, $("$AWS_BIN" --version 2>&1 | head -1)}"

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
echo "[$(date +%T)] s3 rtt=${RTT}ms: mounting (${size_mib} MiB)" >&2
printed=$("$MF" mount "s3@rtt=${RTT}ms" "$mp" --size "${size_mib}MiB")
ns=$(sed -n 's/.*nsenter --net=\([^ ]*\).*/\1/p' <<<"$printed" | head -1)
cred=$(sed -n 's/.*AWS_SHARED_CREDENTIALS_FILE=\([^ ]*\).*/\1/p' <<<"$printed" | head -1)
endpoint=$(sed -n 's/^object store: endpoint \([^ ]*\).*/\1/p' <<<"$printed" | head -1)
[ -n "$ns" ] && [ -n "$cred" ] && [ -n "$endpoint" ] || { echo "objects_race: mount printed no endpoint: $printed" >&2; exit 1; }
mf() { "$MF" "$@" --s3-via "$mp"; }
# rclone as a program (timed runs it through /usr/bin/time): in the stack's namespace,
# its S3 remote `mfs3` from the environment, the credentials from the stack's file.
cat >"$WORK/rc" <<RC
#!/bin/sh
exec nsenter --net="$ns" env -u AWS_CA_BUNDLE -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY \\
    AWS_SHARED_CREDENTIALS_FILE="$cred" RCLONE_CONFIG_MFS3_TYPE=s3 RCLONE_CONFIG_MFS3_PROVIDER=Other \\
    RCLONE_CONFIG_MFS3_ENV_AUTH=true RCLONE_CONFIG_MFS3_ENDPOINT="$endpoint" \\
    RCLONE_CONFIG_MFS3_FORCE_PATH_STYLE=true rclone -q "\$@"
RC
chmod 700 "$WORK/rc"
rc=$WORK/rc
# The AWS CLI the same way: path-style requests to the stack's endpoint (an IP endpoint is
# addressed by path anyway), its checksum left to the defaults of its version.
cat >"$WORK/aws" <<AWSRC
#!/bin/sh
exec nsenter --net="$ns" env -u AWS_CA_BUNDLE -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_PROFILE \\
    AWS_SHARED_CREDENTIALS_FILE="$cred" AWS_DEFAULT_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null \\
    "$AWS_BIN" --endpoint-url "$endpoint" --only-show-errors "\$@"
AWSRC
chmod 700 "$WORK/aws"
awscli=$WORK/aws
via=(--s3-via "$mp")
objects() { mf scan "s3://manyfiles/$1" --json "$WORK/scan.json" --force >/dev/null
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["objects"])' "$WORK/scan.json"; }
mf copy "$SRC" s3://manyfiles/same -q >/dev/null

contenders() {
    echo "mf-$1"
    for t in $TRANSFERS; do echo "rclone-t$t"; done
    if [ "$AWS" = 1 ]; then echo aws; fi
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
            [ "$job" = rm ] && mf copy "$SRC" "s3://manyfiles/r$k" -q >/dev/null
            sync
            j=$WORK/mf.json
            rm -f "$j"
            case "$job/$c" in
                upload/aws) timed "$awscli" s3 sync "$SRC" "s3://manyfiles/u$k" ;;
                download/aws) timed "$awscli" s3 sync s3://manyfiles/same "$dst" ;;
                sync/aws) timed "$awscli" s3 sync --dryrun "$SRC" s3://manyfiles/same ;;
                rm/aws) timed "$awscli" s3 rm --recursive "s3://manyfiles/r$k" ;;
                upload/mf-*) timed "$MF" copy "$SRC" "s3://manyfiles/u$k" "${via[@]}" -q --json "$j" $MF_ARGS ;;
                upload/*) timed "$rc" copy "$SRC" "mfs3:manyfiles/u$k" --transfers "$t" --checkers "$t" ;;
                download/mf-*) timed "$MF" copy s3://manyfiles/same "$dst" "${via[@]}" -q --json "$j" $MF_ARGS ;;
                download/*) timed "$rc" copy mfs3:manyfiles/same "$dst" --transfers "$t" --checkers "$t" ;;
                sync/mf-*) timed "$MF" sync -n "$SRC" s3://manyfiles/same "${via[@]}" -q --json "$j" $MF_ARGS ;;
                sync/*) timed "$rc" sync --dry-run "$SRC" mfs3:manyfiles/same --checkers "$t" ;;
                rm/mf-*) timed "$MF" rm "s3://manyfiles/r$k" "${via[@]}" -q --json "$j" $MF_ARGS ;;
                rm/*) timed "$rc" delete "mfs3:manyfiles/r$k" --checkers "$t" ;;
            esac
            read -r wall _ <"$WORK/last"
            case "$job" in
                upload) got=$(objects "u$k"); [ "$got" = "$N" ] || { echo "$c uploaded $got of $N" >&2; exit 1; }
                        mf rm "s3://manyfiles/u$k" -q >/dev/null ;;
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
# Issue 43's targets: against rclone at its best T, and against the AWS CLI.
targets = {"rclone": {"upload": 2.0, "download": 2.0, "rm": 2.0}, "aws": {"upload": 5.0, "download": 5.0, "sync": 5.0}}
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
            tool = "aws" if c == "aws" else "rclone"
            t = targets[tool].get(job) if c in (best, "aws") else None
            cells += [f"**{x:.2f}**", f"≥ {t}" if t else "", ("PASS" if x >= t else "**MISS**") if t else ""]
        print("| " + " | ".join(cells) + " |")
EOF
