#!/usr/bin/env bash
# Scan benchmark (issue 5): on FILES files in ext4 on a RAM-backed loop image:
#   find        find DIR -printf '%s %T@ %p\n' > /dev/null       (the reference walk)
#   walk-1t     manyfiles scan DIR --threads 1                  (walk + statx, no index)
#   walk        manyfiles scan DIR                              (walk + statx, all cores)
#   sqlite      manyfiles scan DIR --db sqlite:FILE             (fresh index every round)
#   sqlite-re   the same again on the full index (unchanged tree: a rescan)
#   postgres    manyfiles scan DIR --db postgres://…            (fresh database every round)
#   postgres-re the same again (rescan)
# then the nextcloud-like preset (313,860 files, 41,732 folders, ~3 GB) indexed into
# SQLite and PostgreSQL.
#
#   bench/scan.sh            Environment: FILES (default 1000000), ROUNDS (default 5),
#                            NEXTCLOUD=0 to skip the preset, PG=0 to skip PostgreSQL.
#
# PostgreSQL: a throwaway server (Debian's, /usr/lib/postgresql/*/bin) with its data
# directory in /dev/shm, default settings, reached over 127.0.0.1.
# Each round runs the contenders in a rotated order; caches are warm for all (the tree
# was just written, and every contender walks it once per round).
# Prints the machine, the raw figures and a Markdown table: median, min–max, entries/s,
# peak RSS, and the busy cores of other processes during the runs (the machine may be shared).
# Needs root (mount, losetup, setpriv), cargo, python3, /usr/bin/time.
set -euo pipefail
shopt -s inherit_errexit

FILES=${FILES:-1000000}
ROUNDS=${ROUNDS:-5}
NEXTCLOUD=${NEXTCLOUD:-1}
PG=${PG:-1}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=/dev/shm/manyfiles-scanbench-$$
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
PGDATA=$WORK/pg/data
PGPORT=""

# The PostgreSQL server goes first, then lib.sh's cleanup (mount, loop device, $WORK).
scan_cleanup() {
    local rc=$?
    if [ -n "$PGPORT" ]; then
        setpriv --reuid=postgres --regid=postgres --init-groups -- "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
    fi
    (exit $rc)
    bench_cleanup
}
bench_setup
trap scan_cleanup EXIT
bench_build

bench_header "scan benchmark" "FILES=$FILES ROUNDS=$ROUNDS bench/scan.sh" \
    "find: $(find --version | head -1), SQLite $(cd "$ROOT" && grep -A1 'name = "libsqlite3-sys"' Cargo.lock | tail -1 | cut -d'"' -f2) (libsqlite3-sys, bundled)${PGBIN:+, PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}')}"

# A fresh ext4 (lib.sh) with inodes for $1 files on an image of $2.
make_fs() { fresh_ext4 "$2" -N "$1"; }

start_pg() {
    [ "$PG" = 1 ] || return 0
    if [ -z "$PGBIN" ]; then echo "PostgreSQL not installed (apt-get install postgresql) or run with PG=0" >&2; exit 2; fi
    mkdir -p "$WORK/pg"
    chown postgres: "$WORK/pg"
    local as="setpriv --reuid=postgres --regid=postgres --init-groups --"
    $as "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust -E UTF8 >/dev/null
    PGPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    $as "$PGBIN/pg_ctl" -D "$PGDATA" -o "-k $WORK/pg -h 127.0.0.1 -p $PGPORT" -l "$WORK/pg/log" -w start >/dev/null
}

pg_fresh() { # drop and create database $1, print its URL
    local psql="$PGBIN/psql -q -h 127.0.0.1 -p $PGPORT -U postgres -d postgres"
    $psql -c "DROP DATABASE IF EXISTS $1" >/dev/null
    $psql -c "CREATE DATABASE $1" >/dev/null
    echo "postgres://postgres@127.0.0.1:$PGPORT/$1"
}

HZ=$(getconf CLK_TCK)

RAW=$WORK/raw.tsv
: > "$RAW"
# timed NAME ENTRIES CMD...: one run; appends name, seconds, entries, peak RSS (KiB), other cores.
timed() {
    local name=$1 entries=$2 b0 b1 t0 t1 u s rss
    shift 2
    sync
    b0=$(busy)
    t0=$EPOCHREALTIME
    /usr/bin/time -f '%U %S %M' -o "$WORK/time" "$@" > "$WORK/out" 2>&1 || { cat "$WORK/out" >&2; exit 1; }
    t1=$EPOCHREALTIME
    b1=$(busy)
    read -r u s rss < "$WORK/time"
    python3 -c "
e = $t1 - $t0
print('$name', f'{e:.4f}', $entries, $rss, f'{max(0.0, (($b1 - $b0) / $HZ - $u - $s) / e):.2f}', sep='\t')" >> "$RAW"
}

# run_round TREE ENTRIES ORDER-OFFSET NAMES...
run_round() {
    local tree=$1 entries=$2 off=$3
    shift 3
    local names=("$@") n=$# i c url
    for ((i = 0; i < n; i++)); do
        c=${names[$(((i + off) % n))]}
        case "$c" in
            find) timed find "$entries" bash -c "find '$tree' -printf '%s %T@ %p\n' > /dev/null" ;;
            walk-1t) timed walk-1t "$entries" "$MF" scan "$tree" --threads 1 ;;
            walk) timed walk "$entries" "$MF" scan "$tree" ;;
            sqlite) # fresh index, then the rescan of the unchanged tree
                rm -f "$WORK"/index.db*
                timed sqlite "$entries" "$MF" scan "$tree" --db "sqlite:$WORK/index.db"
                timed sqlite-re "$entries" "$MF" scan "$tree" --db "sqlite:$WORK/index.db" ;;
            postgres)
                url=$(pg_fresh scanbench)
                timed postgres "$entries" "$MF" scan "$tree" --db "$url"
                timed postgres-re "$entries" "$MF" scan "$tree" --db "$url" ;;
        esac
    done
}

report() { # TITLE: Markdown table of $RAW, ratios against find
    python3 - "$RAW" "$1" <<'EOF'
import sys, statistics as st
rows = [l.split('\t') for l in open(sys.argv[1]) if l.strip()]
by = {}
for name, secs, n, rss, other in rows:
    by.setdefault(name, []).append((float(secs), int(n), int(rss), float(other)))
print(f"### {sys.argv[2]}\n")
print("| contender | runs | median s | min – max s | entries/s (median) | peak RSS MiB (max) | other cores busy (mean) | vs find |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
ref = st.median(s for s, *_ in by["find"]) if "find" in by else None
for name, v in by.items():
    secs = [s for s, *_ in v]
    m = st.median(secs)
    n = v[0][1]
    ratio = f"{ref / m:.2f}× as fast" if ref else "–"
    print(f"| {name} | {len(v)} | {m:.3f} | {min(secs):.3f} – {max(secs):.3f} | {n / m:,.0f} | "
          f"{max(r for _, _, r, _ in v) / 1024:.0f} | {st.mean(o for *_, o in v):.2f} | {ratio} |")
print()
print("raw (name, seconds, entries, peak RSS KiB, other cores):\n")
print("```")
for r in rows: print("\t".join(x.strip() for x in r))
print("```\n")
EOF
}

start_pg
CONTENDERS=(find walk-1t walk sqlite)
[ "$PG" = 1 ] && CONTENDERS+=(postgres)

# --- FILES small files ----------------------------------------------------------------
make_fs $((FILES + FILES / 4 + 10000)) $((FILES / 1000 * 6 + 512))M
echo "generating $FILES files on ext4 (RAM-backed loop image)..." >&2
"$MF" gen "$MNT/tree" --files "$FILES" --size 0 --files-per-dir 1000 --fanout 16 -q >&2
ENTRIES=$("$MF" scan "$MNT/tree" --json "$WORK/count.json" >/dev/null && python3 -c "import json; print(json.load(open('$WORK/count.json'))['entries'])")
for ((r = 0; r < ROUNDS; r++)); do
    echo "round $((r + 1))/$ROUNDS" >&2
    run_round "$MNT/tree" "$ENTRIES" "$r" "${CONTENDERS[@]}"
done
report "$FILES empty files (1,000 per directory, fan-out 16) on ext4 over /dev/shm: $ENTRIES entries"

# --- nextcloud-like -----------------------------------------------------------------------
if [ "$NEXTCLOUD" = 1 ]; then
    : > "$RAW"
    make_fs 500000 5G
    echo "generating the nextcloud-like tree..." >&2
    "$MF" gen "$MNT/nc" --tree nextcloud-like --content zeros -q >&2
    ENTRIES=$("$MF" scan "$MNT/nc" --json "$WORK/count.json" >/dev/null && python3 -c "import json; print(json.load(open('$WORK/count.json'))['entries'])")
    NC=(find sqlite)
    [ "$PG" = 1 ] && NC+=(postgres)
    for ((r = 0; r < 3; r++)); do
        echo "nextcloud-like round $((r + 1))/3" >&2
        run_round "$MNT/nc" "$ENTRIES" "$r" "${NC[@]}"
    done
    report "nextcloud-like preset (313,860 files, 41,732 folders, ~3 GB) on ext4 over /dev/shm: $ENTRIES entries"
fi
