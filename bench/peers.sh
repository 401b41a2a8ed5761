#!/usr/bin/env bash
# Every engine against its fastest peers, side by side (issue 15): one command that
# installs the peers it can, builds a RAM-backed ext4, runs each job's contenders
# interleaved (order rotated every round), and prints the ratio table.
#
#   bench/peers.sh
#
# Jobs (each on a fresh copy of the workload where it changes the tree):
#   copy   manyfiles copy SRC DST          cpz SRC DST      cp -a SRC/. DST     rsync -aHAX SRC/ DST/
#          manyfiles copy --no-owner --no-xattrs --no-acls --no-hard-links --no-flags (mf-copy-lean:
#          keeping only what cpz keeps, against cpz)
#   gen    manyfiles gen DIR (FILES, SIZE, names as long as ftzz's)  ftzz DIR -n FILES --files-exact -b BYTES --bytes-exact -d 1 -r FILES/DIRS (flat: -d 0)
#   sync   manyfiles sync SRC SAME --dry-run                 rsync -an SRC/ SAME/   rsync -aHAXn SRC/ SAME/
#   scan   manyfiles scan SRC (no index)   find SRC -printf '%s %T@ %p\n'   du -s SRC   gdu -n SRC
#   rm     manyfiles rm DIR                rmz DIR          rm -rf DIR
# and on the nested workload, the limit: c-JOB, bench/tree_loop.c's minimal C loop of the
# calls manyfiles makes per file (copy keeping what cp -a keeps, sync's pair of statx, scan,
# rm, gen; c-copy-lean: the calls of mf-copy-lean), on as many threads as manyfiles'
# default (THREADS, else the cores). A target
# manyfiles misses is printed with what the C loop reaches against the same peer.
# Workloads: "nested" FILES (100000) × SIZE (1k) in DIRS (100) directories, and
# "flat" FLAT_FILES (1000000) empty files in one directory (FLAT_FILES=0 skips it).
# Untimed before every timed run: the tree to work on (a copy of SRC for rm, an empty
# destination for copy, an empty directory for gen), then `sync` and, as root, drop
# caches (CACHE=cold, the default; CACHE=warm keeps them: the trees stay in memory, as
# in a second run over the same tree); and a wait (up to QUIET_MAX s, default 60) until other processes use less
# than QUIET_CORES (0.3) cores: the machine is shared. Each run records the cores
# other processes used meanwhile.
#
# Environment: ONLY (regular expression: the contenders to run), ROUNDS (5), FILES, SIZE, DIRS, FLAT_FILES, THREADS (manyfiles --threads,
# default: none given, each command's own), JOBS (default "copy gen sync scan rm"), IMG_SIZE (8G, sparse), RAW
# (copy the raw TSV here), PROFILE + PROFILE_DIR (strace/perf each run: see timed_profiled;
# bench/peers_profile.py turns the files into per-file tables), MF_BASE (another manyfiles
# binary, run as contender base-JOB with the same arguments but --threads BASE_THREADS
# (default THREADS) and the environment BASE_ENV (VAR=VALUE ...): interleaved A/B of two
# builds, two thread counts or two settings).
# Needs root (mount, losetup), cargo, python3, /usr/bin/time.
# Peers missing are installed: cpz, rmz, ftzz with `cargo install --locked`; rsync,
# gdu with apt-get. A peer that cannot be installed is left out and named.
set -euo pipefail
shopt -s inherit_errexit

ROUNDS=${ROUNDS:-5}
FILES=${FILES:-100000}
SIZE=${SIZE:-1k}
DIRS=${DIRS:-100}
FLAT_FILES=${FLAT_FILES:-1000000}
THREADS=${THREADS:-}   # empty: each command's own default
JOBS=${JOBS:-copy gen sync scan rm}
IMG_SIZE=${IMG_SIZE:-8G}
QUIET_CORES=${QUIET_CORES:-0.3}
CACHE=${CACHE:-cold}
case "$CACHE" in cold|warm) ;; *) echo "CACHE=$CACHE: cold or warm" >&2; exit 2 ;; esac
QUIET_MAX=${QUIET_MAX:-60}
RAW=${RAW:-}
MF_BASE=${MF_BASE:-}
BASE_THREADS=${BASE_THREADS:-$THREADS}
BASE_ENV=${BASE_ENV:-}
PROFILE=${PROFILE:-}
PROFILE_DIR=${PROFILE_DIR:-}
if [ -n "$PROFILE" ]; then mkdir -p "${PROFILE_DIR:?PROFILE needs PROFILE_DIR}"; PROFILE_DIR=$(cd "$PROFILE_DIR" && pwd); fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=/dev/shm/manyfiles-peers-$$
TSV=$WORK/raw.tsv
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_setup

export PATH="$HOME/.cargo/bin:$PATH"
# wanted PEER CONTENDER: ONLY selects the contender (then the peer is installed if missing).
wanted() { [ -z "${ONLY:-}" ] || grep -Eq "^(${ONLY})\$" <<<"$2"; }
for c in cpz rmz ftzz; do
    if wanted "$c" "$c" && ! command -v "$c" >/dev/null; then
        echo "installing $c (cargo install --locked)..." >&2
        cargo install --locked --quiet "$c" >&2 || echo "  $c could not be installed: left out" >&2
    fi
done
for c in rsync gdu; do
    if wanted "$c" "$([ "$c" = rsync ] && echo rsync-an || echo "$c")" && ! command -v "$c" >/dev/null; then
        echo "installing $c (apt-get)..." >&2
        (apt-get install -y -qq "$c" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$c"; }) >&2 ||
            echo "  $c could not be installed: left out" >&2
    fi
done
# /usr/bin/time (the `time` package) gives each run's user and sys CPU; `command -v time`
# would find bash's keyword, so its path is checked.
if [ ! -x /usr/bin/time ]; then
    echo "installing time (apt-get)..." >&2
    (apt-get install -y -qq time >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq time; }) >&2
fi
have() { command -v "$1" >/dev/null; }

bench_build
cc -O2 -pthread -o "$WORK/tree_loop" "$ROOT/bench/tree_loop.c"
CLOOP=$WORK/tree_loop
CLOOP_THREADS=${THREADS:-$(nproc)}
# SIZE in bytes for the C loop's gen (numfmt reads 1k as 1000: K and Ki are 1024 for gen).
SIZE_BYTES=$(numfmt --from=iec "$(tr 'k' 'K' <<<"${SIZE%iB}" | sed 's/i$//')")
# MF_BASE too lives in WORK (memory) for the runs: with CACHE=cold the caches are dropped
# before every run, and a base binary left on disk would be read back each time (the
# build under test is in WORK already: bench_build).
if [ -n "$MF_BASE" ]; then refuse_debug_build "$MF_BASE"; cp "$MF_BASE" "$WORK/manyfiles-base"; MF_BASE_SHOWN=$MF_BASE; MF_BASE=$WORK/manyfiles-base; fi
version() { if have "$1"; then "$1" --version 2>/dev/null | head -1 | tr -s ' '; else echo "$1: missing"; fi; }
bench_header "engines against their peers" \
    "${ONLY:+ONLY='$ONLY' }${MF_BASE:+MF_BASE=${MF_BASE_SHOWN:-$MF_BASE} BASE_THREADS=$BASE_THREADS BASE_ENV='$BASE_ENV' }${PROFILE:+PROFILE=$PROFILE }CACHE=$CACHE ROUNDS=$ROUNDS FILES=$FILES SIZE=$SIZE DIRS=$DIRS FLAT_FILES=$FLAT_FILES THREADS=$THREADS JOBS='$JOBS' bench/peers.sh" \
    "$(version cpz); $(version rmz); $(version ftzz); $(cp --version | head -1); $(version rsync); $(find --version | head -1); $(du --version | head -1); $(version gdu)"

# timed_profiled CMD...: "wall user sys others" to $WORK/last (others: cores other processes used)
# With PROFILE=strace or PROFILE=perf (and PROFILE_DIR), CMD runs under `strace -f -c` or
# `perf record -e cpu-clock -g`, output in PROFILE_DIR/WORKLOAD-JOB-CONTENDER.{strace,perf}
# (ROUNDS=1 makes one of each; times are then distorted by the tracer, not results).
timed_profiled() {
    local t0 t1 b0 b1 u s pre=()
    case "${PROFILE:-}" in
        strace) pre=(strace -f -c -o "$PROFILE_DIR/$CUR.strace") ;;
        perf) pre=(perf record -q -e cpu-clock -g -o "$PROFILE_DIR/$CUR.perf") ;;
        '') ;;
        *) echo "PROFILE=$PROFILE: strace or perf" >&2; exit 2 ;;
    esac
    b0=$(busy); t0=$EPOCHREALTIME
    /usr/bin/time -f '%U %S' -o "$WORK/time" "${pre[@]}" "$@" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
    t1=$EPOCHREALTIME; b1=$(busy)
    read -r u s < "$WORK/time"
    python3 -c "w=max($t1-$t0,1e-6); print(f'{w:.4f} $u $s {max(0.0, (($b1-$b0)/$HZ - $u - $s)/w):.2f}')" > "$WORK/last"
}

count_files() { find "$1" -type f | wc -l; }

: > "$TSV"
fresh_ext4 "$IMG_SIZE" -N $((FILES * 6 + FLAT_FILES * 3 + 200000))

# make_tree NAME KIND: the workload's source tree at $MNT/NAME (untimed, once).
make_tree() {
    local dir=$MNT/$1
    case "$2" in
        nested) "$MF" gen "$dir" --files "$FILES" --size "$SIZE" --fanout "$DIRS" --files-per-dir $((FILES / DIRS)) -q >/dev/null ;;
        flat) "$MF" gen "$dir" --files "$FLAT_FILES" --size 0 --flat -q >/dev/null ;;
    esac
}

# contenders JOB: the peers that are installed (and base-JOB: MF_BASE, another build)
contenders() {
    if [ -n "$MF_BASE" ]; then
        case "$1" in sync) echo base-sync-n ;; *) echo "base-$1" ;; esac
    fi
    case "$1" in
        copy) echo mf-copy; echo mf-copy-lean; have cpz && echo cpz; echo cp-a; echo rsync-aHAX ;;
        gen) echo mf-gen; have ftzz && echo ftzz ;;
        sync) echo mf-sync-n; echo rsync-an; echo rsync-aHAXn ;;
        scan) echo mf-scan; echo find-printf; echo du-s; have gdu && echo gdu ;;
        rm) echo mf-rm; have rmz && echo rmz; echo rm-rf ;;
    esac
    # The C loop knows one level of subdirectories: the nested workload only.
    if [ "$W" = nested ]; then
        echo "c-$1"
        if [ "$1" = copy ]; then echo c-copy-lean; fi
    fi
}

# run_one WORKLOAD JOB CONTENDER
run_one() {
    local w=$1 job=$2 c=$3 src=$MNT/src-$1 dst=$MNT/dst
    rm -rf "$dst"
    case "$c" in
        cp-a) mkdir "$dst" ;;           # the others make DST themselves
    esac
    # Untimed set-up copies by manyfiles copy: cp -a takes a minute on the flat workload.
    if [ "$job" = rm ]; then "$MF" copy "$src" "$dst" -q >/dev/null; fi
    quiesce
    local files
    files=$( [ "$w" = flat ] && echo "$FLAT_FILES" || echo "$FILES" )
    CUR=$w-$job-$c
    local bin=("$MF") THREADS=$THREADS thr=()
    # shellcheck disable=SC2206 # BASE_ENV: words VAR=VALUE
    case "$c" in base-*) bin=(env $BASE_ENV "$MF_BASE"); THREADS=$BASE_THREADS; c=mf-${c#base-} ;; esac
    if [ -n "$THREADS" ]; then thr=(--threads "$THREADS"); fi
    case "$c" in
        mf-copy) timed_profiled "${bin[@]}" copy "$src" "$dst" "${thr[@]}" -q ;;
        mf-copy-lean) timed_profiled "${bin[@]}" copy "$src" "$dst" --no-owner --no-xattrs --no-acls --no-hard-links --no-flags "${thr[@]}" -q ;;
        cpz) timed_profiled cpz "$src" "$dst" ;;
        rsync-aHAX) timed_profiled rsync -aHAX "$src/" "$dst/" ;;
        cp-a) timed_profiled cp -a "$src/." "$dst" ;;
        mf-gen)
            # Names as long as ftzz's (decimal file numbers: as many digits as FILES - 1),
            # not the default 16 characters: longer names make larger directories.
            local nl=$((files - 1))
            nl=${#nl}
            if [ "$w" = flat ]; then timed_profiled "${bin[@]}" gen "$dst" --files "$files" --size 0 --flat --name-len "$nl" "${thr[@]}" -q
            else timed_profiled "${bin[@]}" gen "$dst" --files "$files" --size "$SIZE" --fanout "$DIRS" --files-per-dir $((FILES / DIRS)) --name-len "$nl" "${thr[@]}" -q; fi ;;
        ftzz)
            # ftzz ≥ 3 has no `generate` subcommand; older versions need it.
            local g=()
            if ftzz --help 2>/dev/null | grep -qE '^\s+generate\s'; then g=(g); fi
            local b
            b=$(find "$src" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
            # The same shape as gen's: depth 1, FILES/DIRS files per directory (ftzz's
            # default is files/1000 per directory up to 5 levels deep: 10× the directories).
            # Flat: depth 0, the only shape in which ftzz makes one directory (`-d 1 -r N`
            # made two, 128,138 + 71,863 files for N = 200,000: two directory locks).
            local shape=(-d 1 -r $((FILES / DIRS)))
            if [ "$w" = flat ]; then shape=(-d 0); fi
            if [ "$b" -gt 0 ]; then timed_profiled ftzz "${g[@]}" "$dst" -n "$files" --files-exact -b "$b" --bytes-exact "${shape[@]}"
            else timed_profiled ftzz "${g[@]}" "$dst" -n "$files" --files-exact "${shape[@]}"; fi ;;
        mf-sync-n) timed_profiled "${bin[@]}" sync "$src" "$MNT/same-$w" --dry-run "${thr[@]}" -q ;;
        rsync-an) timed_profiled rsync -an "$src/" "$MNT/same-$w/" ;;
        rsync-aHAXn) timed_profiled rsync -aHAXn "$src/" "$MNT/same-$w/" ;;
        mf-scan) timed_profiled "${bin[@]}" scan "$src" "${thr[@]}" ;;
        find-printf) timed_profiled find "$src" -printf '%s %T@ %p\n' ;;
        du-s) timed_profiled du -s "$src" ;;
        gdu) timed_profiled gdu -n "$src" ;;
        mf-rm) timed_profiled "${bin[@]}" rm "$dst" "${thr[@]}" ;;
        rmz) timed_profiled rmz "$dst" ;;
        rm-rf) timed_profiled rm -rf "$dst" ;;
        c-copy) timed_profiled "$CLOOP" copy "$src" "$dst" "$CLOOP_THREADS" ;;
        c-copy-lean) timed_profiled "$CLOOP" copy-lean "$src" "$dst" "$CLOOP_THREADS" ;;
        c-gen) timed_profiled "$CLOOP" gen "$dst" "$files" "$DIRS" "$SIZE_BYTES" "$CLOOP_THREADS" ;;
        c-sync) timed_profiled "$CLOOP" pair "$src" "$MNT/same-$w" "$CLOOP_THREADS" ;;
        c-scan) timed_profiled "$CLOOP" scan "$src" "$CLOOP_THREADS" ;;
        c-rm) timed_profiled "$CLOOP" rm "$dst" "$CLOOP_THREADS" ;;
    esac
    case "$job" in
        copy|gen)
            local n
            n=$(count_files "$dst")
            if [ "$n" -lt "$files" ]; then echo "$c made $n files, want $files" >&2; exit 1; fi
            # Flat means one directory: two would halve the time each directory's lock is held.
            if [ "$w" = flat ] && [ "$(find "$dst" -type d | wc -l)" -ne 1 ]; then
                echo "$c made more than one directory in the flat workload" >&2; exit 1
            fi ;;
        rm) if [ -e "$dst" ]; then echo "$c left $dst" >&2; exit 1; fi ;;
    esac
    cat "$WORK/last"
}

# ONLY: a regular expression of the contenders to run (default all).
if [ -n "${ONLY:-}" ]; then
    eval "$(declare -f contenders | sed '1s/contenders/contenders_all/')"
    contenders() { contenders_all "$1" | grep -E "^(${ONLY})\$" || true; }
fi

WORKLOADS=(nested)
if [ "$FLAT_FILES" -gt 0 ]; then WORKLOADS+=(flat); fi
for w in "${WORKLOADS[@]}"; do
    W=$w
    echo "workload $w: making the source tree..." >&2
    make_tree "src-$w" "$w"
    "$MF" copy "$MNT/src-$w" "$MNT/same-$w" -q >/dev/null
    for job in $JOBS; do
        mapfile -t cs < <(contenders "$job")
        k=${#cs[@]}
        for ((r = 0; r < ROUNDS; r++)); do
            for ((i = 0; i < k; i++)); do
                c=${cs[$(((i + r) % k))]}
                line=$(run_one "$w" "$job" "$c")
                printf '%s\t%s\t%s\t%s\t%s\n' "$w" "$job" "$((r + 1))" "$c" "$line" | tr ' ' '\t' >> "$TSV"
                echo "  $w $job round $((r + 1)) $c: $line" >&2
            done
        done
    done
    # Room for the next workload (after the last one, unmounting and removing the image
    # is enough: no minute of rm -rf on the flat tree).
    if [ "$w" != "${WORKLOADS[-1]}" ]; then rm -rf "$MNT/src-$w" "$MNT/same-$w" "$MNT/dst"; fi
done
if [ -n "$RAW" ]; then cp "$TSV" "$RAW"; fi

python3 - "$TSV" <<'EOF'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
# workload, job, round, contender, wall, user, sys, others
# (manyfiles contender, peer, target ratio): issue 41's targets (copy keeping what cp -a
# keeps ≥ 1× cpz, keeping only what cpz keeps ≥ 1.2× cpz; sync -n ≥ 3.3× rsync -an; scan ≥
# 2× du -s; rm ≥ 1× rmz; gen ≥ 1× ftzz) and issue 28's (copy ≥ 2.5× cp -a, ≥ 3× rsync -aHAX;
# sync ≥ 3× rsync -aHAXn). The "C loop" column: the same ratio for the C loop of the same
# calls (c-JOB), the limit on this machine, where it ran.
checks_of = {"copy": [("mf-copy", "cpz", 1.0), ("mf-copy-lean", "cpz", 1.2), ("mf-copy", "cp-a", 2.5), ("mf-copy", "rsync-aHAX", 3.0)],
             "gen": [("mf-gen", "ftzz", 1.0)],
             "sync": [("mf-sync-n", "rsync-an", 3.3), ("mf-sync-n", "rsync-aHAXn", 3.0)],
             "scan": [("mf-scan", "du-s", 2.0), ("mf-scan", "find-printf", 2.5)],
             "rm": [("mf-rm", "rmz", 1.0), ("mf-rm", "rm-rf", 2.5)]}
print("| workload | job | contender | median s | min–max s | user+sys s | others (cores, max) | manyfiles × faster (its median ÷ the first manyfiles row's) |")
print("|---|---|---|---:|---:|---:|---:|---:|")
targets = []
for w in dict.fromkeys(r[0] for r in rows):
    for job in dict.fromkeys(r[1] for r in rows if r[0] == w):
        rs = [r for r in rows if r[0] == w and r[1] == job]
        by = {}
        for r in rs:
            by.setdefault(r[3], {})[r[2]] = r
        med = {c: st.median(float(x[4]) for x in v.values()) for c, v in by.items()}
        first_mine = [c for c in by if c.startswith("mf-")][0]
        for c, v in by.items():
            walls = [float(x[4]) for x in v.values()]
            cells = [w, job, c, f"{med[c]:.3f}", f"{min(walls):.3f}–{max(walls):.3f}",
                     f"{st.median(float(x[5]) + float(x[6]) for x in v.values()):.2f}",
                     f"{max(float(x[7]) for x in v.values()):.2f}",
                     "" if c == first_mine else f"{med[c] / med[first_mine]:.2f} ({first_mine})"]
            print("| " + " | ".join(cells) + " |")
        for (mine, peer, t) in checks_of.get(job, []):
            if mine not in by or peer not in by:
                continue
            x = med[peer] / med[mine]
            per = [float(by[peer][k][4]) / float(by[mine][k][4]) for k in by[peer] if k in by[mine]]
            cl = "c-copy-lean" if mine == "mf-copy-lean" else f"c-{job}"
            limit = f"{med[peer] / med[cl]:.2f}" if cl in by else "—"
            targets.append([w, job, f"{mine} against {peer}", f"**{x:.2f}**", f"{min(per):.2f}–{max(per):.2f}",
                            f"≥ {t}", "PASS" if x >= t else "**MISS**", limit])
print()
print("| workload | job | ratio | × (medians) | per-round × | target | result | C loop × the same peer |")
print("|---|---|---|---:|---:|---:|---|---:|")
for row in targets:
    print("| " + " | ".join(row) + " |")
EOF
