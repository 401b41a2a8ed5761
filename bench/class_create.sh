#!/usr/bin/env bash
# Issue 30's Done-when ("the per-file create cost within 25% of what the class's
# parameters predict"), taken apart: `manyfiles ladder --fs ext4@class:CLASS --to TO
# --runs RUNS --ops create`, then per rung the create's median split into the host's part
# (returned: the writes into memory) and the device's (flush: the syncfs), the write
# requests and bytes the loop device saw, and the class's model of the flush from those
# requests and bytes: `DeviceClass::seconds_for` (each request its delay + 0.25 ms of
# stack in `qd` slots and its bytes at `bw`, overlapped: the larger of the two, plus the
# run's SERIAL commits one after another) and, beside it, the sum it used before session
# 15 (the two added). Then
# the per-file cost of each part, fitted over the rungs (relative least squares,
# a·files + b·bytes + k), and what the class's model gives a file at the largest rungs.
#
#   bench/class_create.sh [CLASS]        (default ebs-gp2)
#   Environment: TO (16384), RUNS (6), OUT (/var/tmp/mf-class-create), SERIAL (4: the
#   commits of a create, class_time.rs CREATE_WRITES)
#
# Root; needs nbdkit and nbdfuse (Debian: nbdkit libnbd-bin). Markdown on stdout. Timing
# depends on the machine: a bench, not a test.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MF=${MF:-$ROOT/target/release/manyfiles}
CLASS=${1:-ebs-gp2}
TO=${TO:-16384} RUNS=${RUNS:-6} OUT=${OUT:-/var/tmp/mf-class-create} SERIAL=${SERIAL:-4}
[[ $(id -u) -eq 0 ]] || { echo "class_create: needs root" >&2; exit 2; }
[[ -x $MF ]] || (cd "$ROOT" && cargo build --release --locked -q)
mkdir -p "$OUT"
json=$OUT/create-$CLASS-$TO.json
echo "## create on ext4@class:$CLASS, 1 … $TO files"
echo
echo "- command: \`manyfiles ladder --fs ext4@class:$CLASS --to $TO --runs $RUNS --ops create\`"
echo "- date: $(date -u +%FT%TZ); $(nproc) cores; $("$MF" --version | head -1)"
start=$SECONDS
"$MF" ladder --fs "ext4@class:$CLASS" --to "$TO" --runs "$RUNS" --ops create --quiet --json "$json" >"$OUT/ladder.txt"
alive() { ps -eo stat=,comm= | awk -v c="$1" '$1 !~ /^Z/ && $2 == c' | wc -l; }
echo "- wall: $((SECONDS - start)) s; left behind: $(alive nbdkit) nbdkit, $(alive nbdfuse) nbdfuse (zombies not counted: init reaps them), $(losetup -a | grep -c nbd || true) loop devices on a stack"
echo
python3 - "$json" "$SERIAL" <<'EOF'
import json, statistics, sys
d = json.load(open(sys.argv[1]))
serial = float(sys.argv[2])
m = d["targets"][0]["managed"]["class"]
c, delay_ms = m["class"], m["delay_write_ms"]
bw, qd = c["write"]["bw"], c["qd"]
each = delay_ms * 1e-3 + 250e-6  # the delay filter's wait and the stack's (STACK_OVERHEAD_US)
med = statistics.median
rows = []
for key in dict.fromkeys(x["tree_key"] for x in d["measurements"]):
    ms = [x for x in d["measurements"] if x["tree_key"] == key and x["op"] == "create" and x.get("flush_s") is not None]
    if not ms:
        continue
    n, b = ms[0]["tree_files"], ms[0]["tree_bytes"]
    req = med([x["device"]["write_ops"] for x in ms])
    wb = med([x["device"]["write_bytes"] for x in ms])
    added = req * each / qd + wb / bw
    overlapped = max((req - serial) * each / qd, wb / bw) + serial * each
    rows.append((n, b, med([x["returned_s"] for x in ms]), med([x["flush_s"] for x in ms]), med([x["elapsed_s"] for x in ms]), req, wb, added, overlapped))
print("| files | bytes | create ms | returned ms | flush ms | write requests | MiB written | model ms (seconds_for) | the sum (before) ms |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in sorted(rows, key=lambda r: (r[1] != max(x[1] for x in rows), r[0])):
    print(f"| {r[0]} | {r[1] / 2**20:.0f} MiB | {r[4]*1e3:.1f} | {r[2]*1e3:.1f} | {r[3]*1e3:.1f} | {r[5]:.0f} | {r[6] / 2**20:.1f} | {r[8]*1e3:.1f} ({r[8] / r[3] - 1:+.0%}) | {r[7]*1e3:.1f} ({r[7] / r[3] - 1:+.0%}) |")

def fit(rows, i):
    """a·files + b·bytes + k on relative error: coefficients and standard errors."""
    A = [[r[0] / r[i], r[1] / r[i], 1 / r[i]] for r in rows]
    M = [[sum(a[p] * a[q] for a in A) for q in range(3)] for p in range(3)]
    v = [sum(a[p] for a in A) for p in range(3)]
    aug = [M[p] + [float(p == q) for q in range(3)] for p in range(3)]
    for col in range(3):
        piv = max(range(col, 3), key=lambda r: abs(aug[r][col]))
        aug[col], aug[piv] = aug[piv], aug[col]
        aug[col] = [x / aug[col][col] for x in aug[col]]
        for r in range(3):
            if r != col:
                aug[r] = [x - aug[r][col] * y for x, y in zip(aug[r], aug[col])]
    inv = [row[3:] for row in aug]
    coef = [sum(inv[p][q] * v[q] for q in range(3)) for p in range(3)]
    res = [1 - sum(a[p] * coef[p] for p in range(3)) for a in A]
    s2 = sum(x * x for x in res) / max(len(A) - 3, 1)
    return coef, [(s2 * inv[p][p]) ** 0.5 for p in range(3)]

print()
for i, name in ((4, "create"), (2, "returned (host)"), (3, "flush (device)")):
    (a, b, k), (sa, sb, sk) = fit(rows, i)
    print(f"- {name}: {a*1e6:.2f} ± {sa*1e6:.2f} µs a file, {1 / b / 2**20 if b > 0 else float('inf'):.0f} MiB/s, {k*1e3:.1f} ± {sk*1e3:.1f} ms a run")
big = sorted((r for r in rows if r[1] == max(x[1] for x in rows)), key=lambda r: r[0])[-2:]
if len(big) == 2 and big[1][0] > big[0][0]:
    (n0, _, _, f0, _, q0, w0, a0, o0), (n1, _, _, f1, _, q1, w1, a1, o1) = big
    dn = n1 - n0
    print(f"- the device a file between the two largest rungs ({n0} and {n1} files): measured {(f1 - f0) / dn * 1e6:.1f} µs, "
          f"model {(o1 - o0) / dn * 1e6:.1f} µs, the sum {(a1 - a0) / dn * 1e6:.1f} µs; "
          f"{(q1 - q0) / dn:.4f} requests and {(w1 - w0) / dn:.0f} bytes a file")
EOF
