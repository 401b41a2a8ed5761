#!/usr/bin/env bash
# A/B regression gate (issue 41): two builds of manyfiles, every engine, interleaved on
# one RAM-backed ext4 tree, several rounds; per engine the medians of both builds, the
# ratio HEAD/BASE with its interval, and the instructions retired (perf stat), which the
# load of a shared machine barely moves.
#
#   bench/ab.sh BASE [HEAD]                  commits; HEAD omitted: the working tree as it is
#   BASE_BIN=FILE HEAD_BIN=FILE bench/ab.sh  ready binaries, nothing built
#
# Builds: each commit's sources from `git archive` built in release into AB_TARGET
# (default ROOT/target/ab, seeded from ROOT/target/release so the dependencies are not
# built again); binaries kept in AB_CACHE (/tmp/manyfiles-ab) by commit. All builds end
# before the first timed run.
# Jobs (ENGINES, default all): copy (SRC → new DST), sync-n (sync SRC SAME --dry-run,
# nothing differs), sync-noop (sync SRC SAME, nothing to do), scan (SRC, no index), rm
# (of a copy of SRC made untimed by HEAD's build), gen (FILES × SIZE in DIRS directories
# into a new directory), ladder (LADDER_ARGS: a short ladder, the whole process timed).
# Tree: FILES (100000) × SIZE (1k) in DIRS (100) directories on a fresh ext4 of IMG_SIZE
# (8G, sparse) over an image in /dev/shm. Every round runs each job with both builds,
# which one first alternating; before each timed run `quiesce` (lib.sh: sync, caches
# dropped with CACHE=cold — the default, as in peers.sh — and a wait of at most QUIET_MAX
# (5) s for the machine to be quiet); each run records the cores other processes used.
# Counting: COUNTS (3) untimed passes per job and build under `perf stat -e
# instructions:u,instructions:k` (INSTR=callgrind: user-space instructions under valgrind,
# where the VM shows no hardware counters; INSTR=none or PERF=0 skips them); SYSCALLS=1 adds one pass under
# `strace -f -c` and a table of syscalls per file, BASE against HEAD.
# The ratio's interval: the per-round ratios' median and the distribution-free interval
# of that median (order statistics; its coverage printed: 94% for 5 rounds, ≥ 95% from
# 6). Exit 1 when a job's interval lies wholly above 1 + GATE (0.03): HEAD is slower.
# RAW=FILE keeps the raw TSV. Needs root (mount, losetup), python3, /usr/bin/time, cargo
# (when building), perf and strace (for the counts).
set -euo pipefail
shopt -s inherit_errexit

ROUNDS=${ROUNDS:-5}
FILES=${FILES:-100000}
SIZE=${SIZE:-1k}
DIRS=${DIRS:-100}
ENGINES=${ENGINES:-copy sync-n sync-noop scan rm gen ladder}
IMG_SIZE=${IMG_SIZE:-8G}
CACHE=${CACHE:-cold}
case "$CACHE" in cold|warm) ;; *) echo "CACHE=$CACHE: cold or warm" >&2; exit 2 ;; esac
QUIET_CORES=${QUIET_CORES:-0.3}
QUIET_MAX=${QUIET_MAX:-5}
COUNTS=${COUNTS:-3}
PERF=${PERF:-1}
SYSCALLS=${SYSCALLS:-0}
GATE=${GATE:-0.03}
LADDER_ARGS=${LADDER_ARGS:---total 4M --from 1 --to 4096 --step 16 --runs 1 --cache warm -q}
RAW=${RAW:-}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AB_TARGET=${AB_TARGET:-$ROOT/target/ab}
AB_CACHE=${AB_CACHE:-/tmp/manyfiles-ab}
WORK=/dev/shm/manyfiles-ab-$$
TSV=$WORK/raw.tsv
COUNT_TSV=$WORK/counts.tsv
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"

if [ -z "${BASE_BIN:-}${HEAD_BIN:-}" ] && [ $# -lt 1 ]; then
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
fi
bench_setup
export PATH="$HOME/.cargo/bin:$PATH"

# The release dependencies built once for ROOT serve every commit's build.
seed_target() {
    if [ ! -d "$AB_TARGET/release/deps" ] && [ -d "$ROOT/target/release/deps" ]; then
        echo "seeding $AB_TARGET from $ROOT/target/release..." >&2
        mkdir -p "$AB_TARGET"
        cp -a "$ROOT/target/release" "$AB_TARGET/"
    fi
}

# build_commit COMMIT: a release binary of COMMIT (built once, then kept in AB_CACHE).
build_commit() {
    local full bin src
    full=$(git -C "$ROOT" rev-parse --verify "$1^{commit}")
    bin=$AB_CACHE/manyfiles-${full:0:12}
    if [ -x "$bin" ]; then echo "$bin"; return; fi
    src=$AB_CACHE/src-${full:0:12}
    rm -rf "$src"
    mkdir -p "$src"
    git -C "$ROOT" archive "$full" | tar -x -C "$src"
    seed_target
    echo "building ${full:0:12} (release)..." >&2
    (cd "$src" && CARGO_TARGET_DIR=$AB_TARGET cargo build --release --quiet) >&2
    cp "$AB_TARGET/release/manyfiles" "$bin.tmp"
    mv "$bin.tmp" "$bin"
    rm -rf "$src"
    echo "$bin"
}

# build_worktree: the working tree as it is (uncommitted changes included), copied into
# WORK so a later build cannot swap it under the runs.
build_worktree() {
    seed_target
    echo "building the working tree (release)..." >&2
    (cd "$ROOT" && CARGO_TARGET_DIR=$AB_TARGET cargo build --release --quiet) >&2
    cp "$AB_TARGET/release/manyfiles" "$WORK/manyfiles-worktree"
    echo "$WORK/manyfiles-worktree"
}

if [ -n "${BASE_BIN:-}" ] || [ -n "${HEAD_BIN:-}" ]; then
    : "${BASE_BIN:?BASE_BIN and HEAD_BIN go together}" "${HEAD_BIN:?BASE_BIN and HEAD_BIN go together}"
    BASE_NAME=${BASE_NAME:-$BASE_BIN}
    HEAD_NAME=${HEAD_NAME:-$HEAD_BIN}
else
    mkdir -p "$AB_CACHE"
    BASE_BIN=$(build_commit "$1")
    BASE_NAME=$(git -C "$ROOT" rev-parse --short "$1^{commit}")
    if [ $# -ge 2 ]; then
        HEAD_BIN=$(build_commit "$2")
        HEAD_NAME=$(git -C "$ROOT" rev-parse --short "$2^{commit}")
    else
        HEAD_BIN=$(build_worktree)
        HEAD_NAME="$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- src || echo '+changes')"
    fi
fi
for b in "$BASE_BIN" "$HEAD_BIN"; do
    [ -x "$b" ] || { echo "$b: not an executable" >&2; exit 2; }
    refuse_debug_build "$b"
done
# Both binaries in WORK (memory): dropping the caches before a run must not make one of
# them load from disk while the other stays in memory.
cp "$BASE_BIN" "$WORK/manyfiles-base"
cp "$HEAD_BIN" "$WORK/manyfiles-head"
BASE_BIN=$WORK/manyfiles-base
HEAD_BIN=$WORK/manyfiles-head
# Instructions retired: perf where the CPU's counters are visible (a VM may say
# "<not supported>": then callgrind counts the user-space ones, INSTR=callgrind, slow);
# INSTR=none skips the counting passes.
INSTR=${INSTR:-perf}
if [ "$PERF" = 0 ]; then INSTR=none; fi
if [ "$INSTR" = perf ] && ! { perf stat -x, -e instructions:u -o "$WORK/perf" true 2>/dev/null &&
    awk -F, '$3 ~ /^instructions/ {exit ($1 ~ /^[0-9]+$/) ? 0 : 1}' "$WORK/perf"; }; then
    echo "perf counts no instructions here (no hardware counters?): none counted (INSTR=callgrind counts user-space ones)" >&2
    INSTR=none
fi

bench_header "A/B: $BASE_NAME (BASE) against $HEAD_NAME (HEAD)" \
    "CACHE=$CACHE ROUNDS=$ROUNDS FILES=$FILES SIZE=$SIZE DIRS=$DIRS ENGINES='$ENGINES' COUNTS=$COUNTS SYSCALLS=$SYSCALLS bench/ab.sh ${*:-(BASE_BIN=$BASE_NAME HEAD_BIN=$HEAD_NAME)}" \
    "BASE $("$BASE_BIN" --version | head -1), HEAD $("$HEAD_BIN" --version | head -1)"

fresh_ext4 "$IMG_SIZE" -N $((FILES * 6 + 200000))
SRC=$MNT/src
SAME=$MNT/same
DST=$MNT/dst
echo "making the tree ($FILES × $SIZE in $DIRS directories)..." >&2
"$HEAD_BIN" gen "$SRC" --files "$FILES" --size "$SIZE" --fanout "$DIRS" --files-per-dir $((FILES / DIRS)) -q >/dev/null
"$HEAD_BIN" copy "$SRC" "$SAME" -q >/dev/null

# job_args BIN JOB: the command of JOB with build BIN (stdout: one word a line).
job_args() {
    local bin=$1
    case "$2" in
        copy) printf '%s\n' "$bin" copy "$SRC" "$DST" -q ;;
        sync-n) printf '%s\n' "$bin" sync "$SRC" "$SAME" --dry-run -q ;;
        sync-noop) printf '%s\n' "$bin" sync "$SRC" "$SAME" -q ;;
        scan) printf '%s\n' "$bin" scan "$SRC" ;;
        rm) printf '%s\n' "$bin" rm "$DST" ;;
        gen) printf '%s\n' "$bin" gen "$DST" --files "$FILES" --size "$SIZE" --fanout "$DIRS" --files-per-dir $((FILES / DIRS)) -q ;;
        ladder)
            # Side rungs only where both builds know them: the same rungs for both.
            local side=()
            if "$BASE_BIN" ladder --help | grep -q -- --second-total && "$HEAD_BIN" ladder --help | grep -q -- --second-total; then
                side=(--second-total off)
            fi
            # shellcheck disable=SC2086 # LADDER_ARGS: words
            printf '%s\n' "$bin" ladder --target "$DST" $LADDER_ARGS "${side[@]}" ;;
        *) echo "unknown job $2" >&2; exit 2 ;;
    esac
}

# prepare JOB: the untimed set-up of one run of JOB (the same for both builds).
prepare() {
    rm -rf "$DST"
    case "$1" in
        rm) "$HEAD_BIN" copy "$SRC" "$DST" -q >/dev/null ;;
        ladder) mkdir "$DST" ;;
    esac
}

# check JOB: the run did its work.
check() {
    case "$1" in
        copy|gen)
            local n
            n=$(find "$DST" -type f | wc -l)
            if [ "$n" -lt "$FILES" ]; then echo "$1 made $n files, want $FILES" >&2; exit 1; fi ;;
        rm) if [ -e "$DST" ]; then echo "rm left $DST" >&2; exit 1; fi ;;
    esac
}

# timed_run CMD...: "wall user sys others" (others: cores other processes used meanwhile).
timed_run() {
    local t0 t1 b0 b1 u s
    b0=$(busy); t0=$EPOCHREALTIME
    /usr/bin/time -f '%U %S' -o "$WORK/time" "$@" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
    t1=$EPOCHREALTIME; b1=$(busy)
    read -r u s < "$WORK/time"
    python3 -c "w=max($t1-$t0,1e-6); print(f'{w:.4f} $u $s {max(0.0, (($b1-$b0)/$HZ - $u - $s)/w):.2f}')"
}

: > "$TSV"
: > "$COUNT_TSV"
for ((r = 1; r <= ROUNDS; r++)); do
    for job in $ENGINES; do
        order=(base head)
        if ((r % 2 == 0)); then order=(head base); fi
        for which in "${order[@]}"; do
            bin=$BASE_BIN
            if [ "$which" = head ]; then bin=$HEAD_BIN; fi
            prepare "$job"
            quiesce
            mapfile -t cmd < <(job_args "$bin" "$job")
            line=$(timed_run "${cmd[@]}")
            check "$job"
            printf '%s\t%s\t%s\t%s\n' "$job" "$r" "$which" "$line" | tr ' ' '\t' >> "$TSV"
            echo "  round $r $job $which: $line" >&2
        done
    done
done

# Counting passes (untimed): instructions retired, then syscalls by name.
if [ "$INSTR" != none ]; then
    for ((p = 1; p <= COUNTS; p++)); do
        for job in $ENGINES; do
            for which in base head; do
                bin=$BASE_BIN
                if [ "$which" = head ]; then bin=$HEAD_BIN; fi
                prepare "$job"
                sync
                mapfile -t cmd < <(job_args "$bin" "$job")
                if [ "$INSTR" = perf ]; then
                    perf stat -x, -e instructions:u,instructions:k -o "$WORK/perf" -- "${cmd[@]}" >/dev/null 2>"$WORK/err" ||
                        { cat "$WORK/err" >&2; exit 1; }
                    iu=$(awk -F, '$3 ~ /^instructions:u/ {print $1}' "$WORK/perf")
                    ik=$(awk -F, '$3 ~ /^instructions:k/ {print $1}' "$WORK/perf")
                else
                    valgrind --tool=callgrind --callgrind-out-file="$WORK/cg" -- "${cmd[@]}" >/dev/null 2>"$WORK/err" ||
                        { cat "$WORK/err" >&2; exit 1; }
                    iu=$(awk '/^summary:/ {print $2}' "$WORK/cg")
                    ik=-
                fi
                printf 'instr\t%s\t%s\t%s\t%s\t%s\n' "$job" "$p" "$which" "$iu" "$ik" >> "$COUNT_TSV"
            done
        done
    done
fi
if [ "$SYSCALLS" = 1 ]; then
    for job in $ENGINES; do
        for which in base head; do
            bin=$BASE_BIN
            if [ "$which" = head ]; then bin=$HEAD_BIN; fi
            prepare "$job"
            sync
            mapfile -t cmd < <(job_args "$bin" "$job")
            strace -f -c -o "$WORK/strace" "${cmd[@]}" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
            # strace -c's table: calls in column 4 (or 5 with an errors column), name last.
            awk -v j="$job" -v w="$which" '$NF != "total" && $1 ~ /^[0-9.]+$/ && NF >= 5 {
                printf "sys\t%s\t1\t%s\t%s\t%s\n", j, w, $NF, $4 }' "$WORK/strace" >> "$COUNT_TSV"
        done
    done
fi
if [ -n "$RAW" ]; then cat "$TSV" > "$RAW"; sed 's/^/#count\t/' "$COUNT_TSV" >> "$RAW"; fi

python3 - "$TSV" "$COUNT_TSV" "$FILES" "$GATE" <<'EOF'
import math, statistics as st, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
counts = [l.rstrip("\n").split("\t") for l in open(sys.argv[2]) if l.strip()]
files, gate = int(sys.argv[3]), float(sys.argv[4])

def median_interval(xs):
    """Order statistics (x_(k), x_(n+1-k)) covering the median with probability ≥ 95%,
    the widest-k such pair; with too few values (n < 6) the min and max and their coverage."""
    xs = sorted(xs)
    n = len(xs)
    cover = lambda k: 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2 ** n
    k = 1
    while k + 1 <= n // 2 and cover(k + 1) >= 0.95:
        k += 1
    return xs[k - 1], xs[n - k], cover(k)

# job, round, build, wall, user, sys, others
jobs = list(dict.fromkeys(r[0] for r in rows))
print("| job | BASE median s | HEAD median s | HEAD/BASE (medians) | per-round HEAD/BASE: median [interval, coverage] | HEAD/BASE CPU (user+sys) | others' cores (max) | verdict |")
print("|---|---:|---:|---:|---:|---:|---:|---|")
slower = []
for j in jobs:
    by = {(r[1], r[2]): r for r in rows if r[0] == j}
    rounds = sorted({r[1] for r in rows if r[0] == j}, key=int)
    wall = {w: [float(by[(k, w)][3]) for k in rounds if (k, w) in by] for w in ("base", "head")}
    cpu = {w: [float(by[(k, w)][4]) + float(by[(k, w)][5]) for k in rounds if (k, w) in by] for w in ("base", "head")}
    per = [float(by[(k, "head")][3]) / float(by[(k, "base")][3]) for k in rounds if (k, "head") in by and (k, "base") in by]
    lo, hi, cov = median_interval(per)
    others = max(float(r[6]) for r in rows if r[0] == j)
    if lo > 1 + gate:
        verdict = f"**HEAD slower** (> {1 + gate:.2f})"
        slower.append(j)
    elif hi < 1:
        verdict = "HEAD faster"
    else:
        verdict = "same within the interval"
    print(f"| {j} | {st.median(wall['base']):.3f} | {st.median(wall['head']):.3f} | "
          f"{st.median(wall['head']) / st.median(wall['base']):.3f} | {st.median(per):.3f} [{lo:.3f}–{hi:.3f}, {cov:.0%}] | "
          f"{st.median(cpu['head']) / st.median(cpu['base']):.3f} | {others:.2f} | {verdict} |")

instr = [c for c in counts if c[0] == "instr"]
if instr:
    print()
    kernel = any(c[5].isdigit() for c in instr)
    print("Instructions retired (" + ("perf stat, user and kernel" if kernel else "callgrind, user space only")
          + "; median of the counting passes; per file: all ÷ FILES):")
    print()
    print("| job | BASE user | HEAD user | HEAD/BASE user | BASE kernel | HEAD kernel | HEAD/BASE kernel | BASE per file | HEAD per file |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for j in jobs:
        m = {}
        for w in ("base", "head"):
            us = [int(c[4]) for c in instr if c[1] == j and c[3] == w if c[4].isdigit()]
            ks = [int(c[5]) for c in instr if c[1] == j and c[3] == w if c[5].isdigit()]
            m[w] = (st.median(us) if us else None, st.median(ks) if ks else None)
        (bu, bk), (hu, hk) = m["base"], m["head"]
        if bu is None or hu is None:
            continue
        mio = lambda x: "—" if x is None else f"{x / 1e6:.1f} M"
        kr = f"{hk / bk:.3f}" if bk and hk else "—"
        print(f"| {j} | {mio(bu)} | {mio(hu)} | {hu / bu:.3f} | {mio(bk)} | {mio(hk)} | {kr} | "
              f"{(bu + (bk or 0)) / files:,.0f} | {(hu + (hk or 0)) / files:,.0f} |")

sysc = [c for c in counts if c[0] == "sys"]
if sysc:
    print()
    print(f"Syscalls per file (strace -f -c, one pass each; {files:,} files; calls ≥ 0.01 a file in either build):")
    print()
    print("| job | syscall | BASE per file | HEAD per file |")
    print("|---|---|---:|---:|")
    for j in jobs:
        calls = {}
        for c in sysc:
            if c[1] == j:
                calls.setdefault(c[4], {})[c[3]] = int(c[5])
        tot = {w: sum(v.get(w, 0) for v in calls.values()) for w in ("base", "head")}
        for name, v in sorted(calls.items(), key=lambda kv: -max(kv[1].values())):
            b, h = v.get("base", 0) / files, v.get("head", 0) / files
            if max(b, h) >= 0.01:
                print(f"| {j} | {name} | {b:.3f} | {h:.3f} |")
        print(f"| {j} | **all** | **{tot['base'] / files:.3f}** | **{tot['head'] / files:.3f}** |")
if slower:
    print()
    print(f"HEAD slower than BASE beyond {gate:.0%} (whole interval): {', '.join(slower)}")
    sys.exit(1)
EOF
