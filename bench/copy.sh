#!/usr/bin/env bash
# Copy and sync benchmark: manyfiles copy vs cp -a and tar|tar, manyfiles sync --dry-run
# vs rsync -an on identical trees, and the peak RSS of a 1,000,000-file sync.
#
#   bench/copy.sh
#
# Everything happens on ext4 in a RAM-backed image (/dev/shm → loop → mkfs.ext4 with
# inode tables initialised up front → mount), so only the file system's and the tools'
# own costs are measured. The source tree is made once with `manyfiles gen`.
#
# Environment: ROUNDS (measured rounds, default 5), WARMUP (default 1), FILES (default
# 100000), SIZE (default 1k), DIRS (default 100: FILES/DIRS files per directory),
# THREADS (manyfiles --threads, default nproc), IMG_SIZE (default 4G), MEM_FILES
# (files of the RSS check, default 1000000; 0 skips it), MEM_IMG_SIZE (its image, default
# 8G, sparse), RAW (also copy the raw TSV here). ROUNDS=0 runs only the RSS check.
#
# Every round runs each contender once, in an order rotated by one each round:
#   copy: mf-copy     manyfiles copy SRC DST --threads T -q
#         cp-a        cp -a SRC/. DST
#         tar         sh -c 'tar -C SRC -cf - . | tar -C DST -xf -'
#   sync (DST an identical copy of SRC):
#         mf-sync-n   manyfiles sync SRC DST --dry-run --threads T -q
#         rsync-an    rsync -an SRC/ DST/
#         mf-sync     manyfiles sync SRC DST --threads T -q   (no --dry-run: nothing to do)
# The copy destination is removed and `sync` runs before every timed run (untimed); each
# copy's result is checked (file count, bytes). Wall time from bash's EPOCHREALTIME;
# user/sys CPU and peak RSS from /usr/bin/time. The load average at each run's start is
# recorded: this machine is shared.
# Needs root (mount, losetup), cargo, python3, rsync, /usr/bin/time.
set -euo pipefail
shopt -s inherit_errexit

ROUNDS=${ROUNDS:-5}
WARMUP=${WARMUP:-1}
FILES=${FILES:-100000}
SIZE=${SIZE:-1k}
DIRS=${DIRS:-100}
THREADS=${THREADS:-$(nproc)}
IMG_SIZE=${IMG_SIZE:-4G}
MEM_IMG_SIZE=${MEM_IMG_SIZE:-8G}
MEM_FILES=${MEM_FILES:-1000000}
RAW=${RAW:-}

for tool in rsync python3 /usr/bin/time mkfs.ext4 losetup; do
    command -v "$tool" >/dev/null || { echo "bench/copy.sh needs $tool" >&2; exit 2; }
done
if [ $((FILES % DIRS)) -ne 0 ]; then echo "FILES must be a multiple of DIRS" >&2; exit 2; fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=/dev/shm/manyfiles-copybench-$$
TSV=$WORK/raw.tsv
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_setup

bench_build

bench_header "copy and sync benchmark" \
    "ROUNDS=$ROUNDS WARMUP=$WARMUP FILES=$FILES SIZE=$SIZE DIRS=$DIRS THREADS=$THREADS MEM_FILES=$MEM_FILES bench/copy.sh" \
    "$(cp --version | head -1); $(tar --version | head -1); $(rsync --version | head -1 | sed 's/  */ /g')"

# --- the tree (ROUNDS=0: none, only the memory check) ----------------------------------
fresh_ext4 "$IMG_SIZE" -N $((FILES * 4 + 100000))
SRC=$MNT/src
if [ "$ROUNDS" -gt 0 ]; then
    echo "generating $FILES files of $SIZE in $DIRS directories..." >&2
    "$MF" gen "$MNT/src" --files "$FILES" --size "$SIZE" --fanout "$DIRS" --files-per-dir $((FILES / DIRS)) -q >/dev/null
    rm -f "$MNT/src/.manyfiles-run"   # gen's marker: not part of the data set
    SRC=$MNT/src
    SRC_FILES=$(find "$SRC" -type f | wc -l)
    # Sum of the files' sizes (directory sizes differ from tool to tool and do not count).
    file_bytes() { find "$1" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
    SRC_BYTES=$(file_bytes "$SRC")
    # The identical tree the sync contenders compare against.
    cp -a "$SRC/." "$MNT/same"
    if [ -n "$(rsync -ani "$SRC/" "$MNT/same/")" ]; then echo "rsync sees differences in the identical copy" >&2; exit 1; fi
fi

run_one() {
    local c=$1 dst=$MNT/dst
    case "$c" in
        mf-copy|cp-a|tar) rm -rf "$dst"; mkdir "$dst" ;;
    esac
    sync
    local load
    load=$(cut -d' ' -f1 /proc/loadavg)
    case "$c" in
        mf-copy) timed "$MF" copy "$SRC" "$dst" --threads "$THREADS" -q ;;
        cp-a) timed cp -a "$SRC/." "$dst" ;;
        tar) timed sh -c "tar -C '$SRC' -cf - . | tar -C '$dst' -xf -" ;;
        mf-sync-n) timed "$MF" sync "$SRC" "$MNT/same" --dry-run --threads "$THREADS" -q ;;
        rsync-an) timed rsync -an "$SRC/" "$MNT/same/" ;;
        mf-sync) timed "$MF" sync "$SRC" "$MNT/same" --threads "$THREADS" -q ;;
    esac
    case "$c" in
        mf-copy|cp-a|tar)
            local n b
            n=$(find "$dst" -type f | wc -l)
            b=$(file_bytes "$dst")
            if [ "$n" != "$SRC_FILES" ] || [ "$b" != "$SRC_BYTES" ]; then
                echo "$c produced a wrong tree: $n files, $b bytes (want $SRC_FILES, $SRC_BYTES)" >&2
                exit 1
            fi
            ;;
    esac
    echo "$(cat "$WORK/last") $load"
}

CONTENDERS=(mf-copy cp-a tar mf-sync-n rsync-an mf-sync)
: > "$TSV"
if [ "$ROUNDS" -eq 0 ]; then WARMUP=0; fi   # ROUNDS=0: only the memory check
for ((r = 0; r < WARMUP + ROUNDS; r++)); do
    k=${#CONTENDERS[@]}
    for ((i = 0; i < k; i++)); do
        c=${CONTENDERS[$(((i + r) % k))]}
        line=$(run_one "$c")
        if [ "$r" -ge "$WARMUP" ]; then
            printf '%s\t%s\t%s\n' "$((r - WARMUP + 1))" "$c" "$line" | tr ' ' '\t' >> "$TSV"
        fi
        echo "  round $((r + 1)) $c: $line" >&2
    done
done
rm -rf "$MNT/dst"

# --- memory: a 1,000,000-file sync ---------------------------------------------------
MEM_LINE=""
if [ "$MEM_FILES" -gt 0 ]; then
    echo "memory check: $MEM_FILES files..." >&2
    # A file system of its own, with inodes for source and destination (gen's space
    # check counts a block per file, so the image is larger than 0-byte files need).
    fresh_ext4 "$MEM_IMG_SIZE" -N $((MEM_FILES * 2 + 100000))
    "$MF" gen "$MNT/big" --files "$MEM_FILES" --size 0 --fanout 1000 --files-per-dir 1000 -q >/dev/null
    sync
    timed "$MF" sync "$MNT/big" "$MNT/bigdst" --threads "$THREADS" -q
    read -r w1 u1 s1 m1 < "$WORK/last"
    sync
    timed "$MF" sync "$MNT/big" "$MNT/bigdst" --threads "$THREADS" -q
    read -r w2 u2 s2 m2 < "$WORK/last"
    MEM_LINE="$MEM_FILES $w1 $m1 $w2 $m2"
fi

if [ -n "$RAW" ]; then cp "$TSV" "$RAW"; fi

python3 - "$TSV" "$MEM_LINE" <<'EOF'
import sys, statistics as st
rows = [l.split("\t") for l in open(sys.argv[1]) if l.strip()]
if not rows:
    if sys.argv[2]:
        n, w1, m1, w2, m2 = sys.argv[2].split()
        print(f"Memory: `manyfiles sync` of {int(n):,} empty files into an empty destination: {float(w1):.1f} s, peak RSS "
              f"**{int(m1) / 1024:.1f} MiB**; again with nothing to do: {float(w2):.1f} s, peak RSS **{int(m2) / 1024:.1f} MiB**.")
    sys.exit(0)
by = {}
for r in rows:
    by.setdefault(r[1], []).append((float(r[2]), float(r[3]), float(r[4]), int(r[5]), float(r[6])))
med = {c: st.median(x[0] for x in v) for c, v in by.items()}
def ratio_range(a, b):
    # per-round ratio b/a (a faster when > 1)
    ra = {r[0]: float(r[2]) for r in rows if r[1] == a}
    rb = {r[0]: float(r[2]) for r in rows if r[1] == b}
    q = [rb[k] / ra[k] for k in ra if k in rb]
    return f"{min(q):.2f}–{max(q):.2f}"
targets = {("mf-copy", "cp-a"): 3.0, ("mf-copy", "tar"): 1.5, ("mf-sync-n", "rsync-an"): 3.0}
print("| group | contender | median s | min–max s | user+sys s (median) | peak RSS MiB | load avg at start | vs | × faster (median) | per-round × | target | result |")
print("|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---|")
for grp, cs, base in [("copy", ["mf-copy", "cp-a", "tar"], None), ("sync, identical trees", ["mf-sync-n", "rsync-an", "mf-sync"], None)]:
    for c in cs:
        v = by.get(c, [])
        if not v:
            continue
        cells = [grp, c, f"{med[c]:.3f}", f"{min(x[0] for x in v):.3f}–{max(x[0] for x in v):.3f}",
                 f"{st.median(x[1] + x[2] for x in v):.2f}", f"{max(x[3] for x in v) / 1024:.1f}",
                 f"{min(x[4] for x in v):.2f}–{max(x[4] for x in v):.2f}"]
        comps = [(a, b) for (a, b) in targets if a == c]
        if comps:
            for i, (a, b) in enumerate(comps):
                t = targets[(a, b)]
                x = med[b] / med[a]
                row = cells if i == 0 else [""] * 7
                print("| " + " | ".join(row + [b, f"**{x:.2f}**", ratio_range(a, b), f"≥ {t}", "PASS" if x >= t else "**MISS**"]) + " |")
        else:
            print("| " + " | ".join(cells + ["", "", "", "", ""]) + " |")
if sys.argv[2]:
    n, w1, m1, w2, m2 = sys.argv[2].split()
    print()
    print(f"Memory: `manyfiles sync` of {int(n):,} empty files (1,000 directories of 1,000) into an empty destination: "
          f"{float(w1):.1f} s, peak RSS **{int(m1) / 1024:.1f} MiB**; the same again with nothing to do: {float(w2):.1f} s, "
          f"peak RSS **{int(m2) / 1024:.1f} MiB** (target ≤ 150 MB: {'PASS' if max(int(m1), int(m2)) * 1024 <= 150e6 else 'MISS'}).")
print()
print("Raw seconds per round (load average at start in brackets):")
print()
k = max(int(r[0]) for r in rows)
print("| contender | " + " | ".join(f"r{i}" for i in range(1, k + 1)) + " |")
print("|---|" + "---:|" * k)
for c in by:
    print(f"| {c} | " + " | ".join(f"{float(r[2]):.3f} [{float(r[6]):.2f}]" for r in rows if r[1] == c) + " |")
EOF
