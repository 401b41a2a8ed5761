#!/usr/bin/env bash
# What the default ladder measures on a disk and on RAM, before and after "storage, not
# cache": for each of ROUNDS interleaved rounds, the default ladder (64 MiB split into
# 1 … 65,536 files, create/read/delete) on DISK_DIR (the VM's disk) and on a RAM-backed
# ext4 (--fs ext4), once with --cache warm and once cold (the default); the returned and
# durable times come from the same runs (both are in every measurement). Beside them, the
# device's own bandwidth: `manyfiles bigfile` (1 GiB, durable: write loop + fsync) and fio
# with O_DIRECT (1 GiB sequential write and read, 1 MiB blocks).
#
#   bench/storage.sh [ROUNDS] [DISK_DIR]     (root; installs fio if missing)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${1:-3}
DISK=${2:-/var/tmp}
WORK=/dev/shm/mf-storage-$$
source "$ROOT/bench/lib.sh"
bench_setup
bench_build
command -v fio >/dev/null || { apt-get install -y -qq fio >/dev/null; }
DISK_WORK=$(mktemp -d "$DISK/mf-storage.XXXX")
RES=$WORK/res
mkdir -p "$RES"

for r in $(seq 1 "$ROUNDS"); do
    echo "round $r/$ROUNDS" >&2
    for cache in warm cold; do
        "$MF" ladder --target "$DISK_WORK" --cache "$cache" -q --json "$RES/disk-$cache-$r.json" >/dev/null
        "$MF" ladder --fs ext4 --cache "$cache" -q --json "$RES/ram-$cache-$r.json" >/dev/null
    done
    "$MF" bigfile --target "$DISK_WORK" --size 1GiB --runs 1 -q --json "$RES/bigfile-$r.json" >/dev/null
    fio --name=w --directory="$DISK_WORK" --rw=write --bs=1M --size=1G --direct=1 --ioengine=psync \
        --output-format=json --output="$RES/fio-w-$r.json" >/dev/null
    fio --name=w --directory="$DISK_WORK" --rw=read --bs=1M --size=1G --direct=1 --ioengine=psync \
        --output-format=json --output="$RES/fio-r-$r.json" >/dev/null
    rm -f "$DISK_WORK"/w.*
done

bench_header "Storage, not cache: the default ladder on disk and RAM-backed ext4 ($ROUNDS rounds)" \
    "bench/storage.sh $ROUNDS $DISK" "$("$MF" --version) · $(fio --version)"
python3 - "$RES" "$ROUNDS" <<'PY'
import json, sys, statistics as st
res, rounds = sys.argv[1], int(sys.argv[2])
def load(p): return json.load(open(p))
def model(rs, op, until):
    """Per-file cost and bandwidth of `op` fitted from the ladder's raw measurements with
    the chosen time, by the tool's own fit (models in the file use its --until)."""
    import itertools
    pts = [(m["tree_files"], m["tree_bytes"], m["returned_s"] if until == "returned" and "returned_s" in m else m["elapsed_s"])
           for m in rs["measurements"] if m["op"] == op and m["errors"] == 0]
    # least squares on relative error for t = a*files + b*bytes (both >= 0)
    import math
    sxx = sxy = syy = sx = sy = 0.0
    A = [[0,0],[0,0]]; B = [0,0]
    for f, b, t in pts:
        w = 1.0 / (t * t)
        A[0][0] += w*f*f; A[0][1] += w*f*b; A[1][1] += w*b*b; B[0] += w*f*t; B[1] += w*b*t
    A[1][0] = A[0][1]
    det = A[0][0]*A[1][1] - A[0][1]*A[1][0]
    a = (B[0]*A[1][1] - B[1]*A[0][1]) / det
    bb = (A[0][0]*B[1] - A[1][0]*B[0]) / det
    return a, bb
rows = []
for where in ["disk", "ram"]:
    for cache in ["warm", "cold"]:
        for op in ["create", "read", "delete"]:
            for until in (["returned", "durable"] if op != "read" else ["-"]):
                pf, bw = [], []
                for r in range(1, rounds + 1):
                    rs = load(f"{res}/{where}-{cache}-{r}.json")
                    a, b = model(rs, op, until)
                    pf.append(a * 1e6); bw.append(1 / b / 1048576 if b > 0 else float("inf"))
                rows.append((where, cache, op, until, st.median(pf), min(pf), max(pf), st.median(bw), min(bw), max(bw)))
print("| target | cache | op | time | per file µs (median, range) | bandwidth MiB/s (median, range) |")
print("| --- | --- | --- | --- | --- | --- |")
for w, c, o, u, p, plo, phi, b, blo, bhi in rows:
    print(f"| {w} | {c} | {o} | {u} | {p:.1f} ({plo:.1f} – {phi:.1f}) | {b:.0f} ({blo:.0f} – {bhi:.0f}) |")
bf = [ (lambda rs: [m for m in rs["measurements"] if m["op"] == "bigfile-write"][0])(load(f"{res}/bigfile-{r}.json")) for r in range(1, rounds+1)]
dur = [m["bytes"] / m["elapsed_s"] / 1048576 for m in bf]
ret = [m["bytes"] / m["returned_s"] / 1048576 for m in bf]
fw = [load(f"{res}/fio-w-{r}.json")["jobs"][0]["write"]["bw_bytes"] / 1048576 for r in range(1, rounds+1)]
fr = [load(f"{res}/fio-r-{r}.json")["jobs"][0]["read"]["bw_bytes"] / 1048576 for r in range(1, rounds+1)]
print()
print("| disk, 1 GiB sequential | MiB/s (median, range) |")
print("| --- | --- |")
for name, v in [("bigfile write, returned (write loop)", ret), ("bigfile write, durable (loop + fsync)", dur), ("fio write O_DIRECT 1 MiB", fw), ("fio read O_DIRECT 1 MiB", fr)]:
    print(f"| {name} | {st.median(v):.0f} ({min(v):.0f} – {max(v):.0f}) |")
PY
