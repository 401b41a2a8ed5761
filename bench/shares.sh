#!/usr/bin/env bash
# Issue 31's validation of the share targets: what one file operation costs through each
# share at a chosen round trip, and how many round trips that is.
#
#   bench/shares.sh            (root: mounts; needs what `--fs share:` needs, see README)
#   PROTOS="sftp smb" RTTS="0 1 5" N=100
#
# For each protocol and RTT (ms): `manyfiles mount share:PROTO@rtt=RTTms DIR`, then, with
# a distinct name for every sample (the clients cache attributes and entries for 1 s or
# more, so a repeated name would time the cache):
#   stat            lstat of a file that exists                (N samples)
#   open+read 1KiB  open, read 1 KiB, close                    (N samples)
#   create+write    open(O_CREAT|O_EXCL), write 1 KiB, close   (N samples)
#   readdir 1000    list a directory of 1,000 entries made through the share (16 creates
#                   at a time, untimed; 3 samples, each its own directory)
# Medians in ms; "RTTs" = (median − median at RTT 0) / RTT: the round trips an operation
# pays. The times are the client's (FUSE daemon included), measured from Python
# (perf_counter around each call: its own cost is ~1 µs, far below one round trip).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=/dev/shm/mf-shares-$$
source "$ROOT/bench/lib.sh"
[ "$(id -u)" = 0 ] || { echo "shares: needs root (mounts)" >&2; exit 2; }
bench_setup
bench_build
PROTOS=${PROTOS:-"sftp smb"}
RTTS=${RTTS:-"0 1 5"}
N=${N:-100}
mounted=""
trap 'st=$?; if [ -n "$mounted" ]; then "$MF" umount "$mounted" >/dev/null 2>&1 || true; fi; (exit $st); bench_cleanup' EXIT

bench_header "Shares: one operation's cost and its round trips" \
    "PROTOS=\"$PROTOS\" RTTS=\"$RTTS\" N=$N bench/shares.sh" "$("$MF" --version)"

raw=$WORK/raw.tsv
: >"$raw"
for proto in $PROTOS; do
    for rtt in $RTTS; do
        dir=$WORK/m-$proto-$rtt
        mkdir -p "$dir"
        echo "[$(date +%T)] $proto rtt=${rtt}ms" >&2
        "$MF" mount "share:$proto@rtt=${rtt}ms" "$dir" >/dev/null
        mounted=$dir
        python3 - "$dir" "$N" "$proto" "$rtt" >>"$raw" <<'EOF'
import concurrent.futures, os, sys, time, statistics
d, n, proto, rtt = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
base = os.path.join(d, "b")
os.mkdir(base)
for i in range(n):                       # files to stat and read (untimed)
    with open(os.path.join(base, f"s{i}"), "wb") as f:
        f.write(b"x" * 1024)
time.sleep(2.5)                          # let attribute and entry caches expire
def timed(fn, names):
    out = []
    for nm in names:
        t = time.perf_counter(); fn(nm); out.append(time.perf_counter() - t)
    return out
def rd(nm):
    fd = os.open(nm, os.O_RDONLY); os.read(fd, 1024); os.close(fd)
def cw(nm):
    fd = os.open(nm, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644); os.write(fd, b"y" * 1024); os.close(fd)
res = {}
res["stat"] = timed(os.lstat, [os.path.join(base, f"s{i}") for i in range(n)])
time.sleep(2.5)
res["open+read 1KiB"] = timed(rd, [os.path.join(base, f"s{i}") for i in range(n)])
res["create+write 1KiB"] = timed(cw, [os.path.join(base, f"c{i}") for i in range(n)])
ls = []
for k in range(3):
    sub = os.path.join(d, f"l{k}")
    os.mkdir(sub)
    # Made 16 at a time (untimed): one at a time costs 1,000 create round trips.
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda i: open(os.path.join(sub, f"e{i:04d}"), "wb").close(), range(1000)))
    time.sleep(2.5)
    t = time.perf_counter(); names = os.listdir(sub); ls.append(time.perf_counter() - t)
    assert len(names) == 1000, len(names)
res["readdir 1000"] = ls
for op, xs in res.items():
    print(f"{proto}\t{rtt}\t{op}\t{statistics.median(xs)*1e3:.3f}\t{min(xs)*1e3:.3f}\t{max(xs)*1e3:.3f}\t{len(xs)}")
EOF
        "$MF" umount "$dir" >/dev/null
        mounted=""
    done
done

python3 - "$raw" <<'EOF'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
med = {(p, int(r), op): float(m) for p, r, op, m, *_ in rows}
print("| share | op | RTT ms | median ms | min–max ms | samples | RTTs paid |")
print("|---|---|---:|---:|---:|---:|---:|")
for p, r, op, m, lo, hi, n in rows:
    r = int(r)
    base = med.get((p, 0, op))
    trips = f"{(float(m) - base) / r:.1f}" if r > 0 and base is not None else "—"
    print(f"| {p} | {op} | {r} | {m} | {lo}–{hi} | {n} | {trips} |")
EOF
