#!/usr/bin/env bash
# Issue 30's three seed experiments (../shared/DESIGN.md) on emulated storage, scaled to
# fit a session (the scale is printed; compare the per-file figures):
#   copy     ladder --fs ntfs@class:hdd,exfat@class:hdd --ops create: TOTAL split into
#            1 … TO files written from memory (a RAM source) onto each, durable; the fitted
#            per-file cost beside the seed's ~3 ms per file (Windows copy, SSD → USB HDD).
#   scan     for each EBS class: `manyfiles mount ext4@class:C`, `gen --tree nextcloud-like
#            --scale SCALE` on it, then per round (caches dropped before each run, the ext4
#            journal checkpointed): a walk-only scan, a scan into a fresh SQLite index on the
#            same volume, and (PG=1) a scan into a fresh PostgreSQL database whose server's
#            data directory is on the same volume. The seed: 11m33s–11m57s on 500, 1,500
#            and 3,000 IOPS volumes (313,860 files: ~440 files/s).
#   bigfile  bigfile --fs btrfs@class:hdd,ext4@class:hdd,xfs@class:hdd, RUNS runs: does btrfs
#            keep its first run's speed?
#
#   bench/class_seeds.sh [copy] [scan] [bigfile]      (default: all three)
#   Environment: COPY_TOTAL (64MiB), COPY_TO (4096), COPY_RUNS (3), SCALE (0.02), ROUNDS (3),
#   PG (1), BIG (256MiB), RUNS (10), OUT (directory for the JSON, default /var/tmp/mf-seeds)
#
# Root; needs nbdkit, nbdfuse (Debian: nbdkit libnbd-bin), ntfs-3g and exfatprogs for copy,
# btrfs-progs and xfsprogs for bigfile, Debian's postgresql for PG=1. Markdown on stdout,
# progress on stderr. Timing depends on the machine: a bench, not a test.
set -euo pipefail
shopt -s inherit_errexit
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MF=${MF:-$ROOT/target/release/manyfiles}
COPY_TOTAL=${COPY_TOTAL:-64MiB} COPY_TO=${COPY_TO:-4096} COPY_RUNS=${COPY_RUNS:-3}
SCALE=${SCALE:-0.02} ROUNDS=${ROUNDS:-3} PG=${PG:-1} BIG=${BIG:-256MiB} RUNS=${RUNS:-10}
OUT=${OUT:-/var/tmp/mf-seeds}
jobs=("$@")
[[ ${#jobs[@]} -gt 0 ]] || jobs=(copy scan bigfile)
[[ $(id -u) -eq 0 ]] || { echo "class_seeds: needs root" >&2; exit 2; }
[[ -x $MF ]] || (cd "$ROOT" && cargo build --release --locked -q)
mkdir -p "$OUT"
say() { echo "[$(date -u +%T)] $*" >&2; }
secs() { python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["elapsed_s"])' "$1"; }

echo "## Device classes: the seed experiments (issue 30)"
echo
echo "- command: \`$(for v in COPY_TOTAL COPY_TO COPY_RUNS SCALE ROUNDS PG BIG RUNS; do printf '%s=%s ' "$v" "${!v}"; done)bench/class_seeds.sh ${jobs[*]}\`"
echo "- date: $(date -u '+%F %H:%M') UTC"
echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB RAM, kernel $(uname -r)"
echo "- $("$MF" --version | head -1); $(nbdkit --version | head -1); $(nbdfuse --version 2>&1 | head -1)"
echo

for job in "${jobs[@]}"; do
case $job in
copy)
    say "copy: ladder onto ntfs and exfat on class:hdd ($COPY_TOTAL to $COPY_TO files, $COPY_RUNS runs)"
    "$MF" ladder --fs ntfs@class:hdd,exfat@class:hdd --total "$COPY_TOTAL" --to "$COPY_TO" --ops create \
        --runs "$COPY_RUNS" --second-total off --json "$OUT/copy.json" --markdown "$OUT/copy.md" >&2
    echo "### copy: $COPY_TOTAL split into 1 … $COPY_TO files onto NTFS and exFAT on class:hdd"
    echo
    cat "$OUT/copy.md"
    echo
    ;;
scan)
    echo "### scan: nextcloud-like × $SCALE on the EBS classes"
    echo
    echo "| class | run | files | walk s | SQLite index s | PostgreSQL index s |"
    echo "|---|---:|---:|---:|---:|---:|"
    PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
    if [[ $PG == 1 && -z $PGBIN ]]; then echo "class_seeds: PostgreSQL not installed (apt-get install postgresql) or PG=0" >&2; exit 2; fi
    for c in ebs-magnetic ebs-gp2 ebs-io1; do
        dir=$(mktemp -d /var/tmp/mf-seed-XXXXXX)
        pgstop() { [[ -n ${PGDATA:-} && -f $PGDATA/postmaster.pid ]] && setpriv --reuid=postgres --regid=postgres --init-groups -- "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null || true; }
        trap 'pgstop; "$MF" umount "$dir" >/dev/null 2>&1 || true; rmdir "$dir" 2>/dev/null || true' EXIT
        say "scan: mounting ext4@class:$c"
        "$MF" mount "ext4@class:$c" "$dir" --size 2GiB >&2
        say "scan: gen nextcloud-like × $SCALE"
        "$MF" gen "$dir/tree" --tree nextcloud-like --scale "$SCALE" -q >&2
        files=$(find "$dir/tree" -type f | wc -l)
        PGDATA=
        if [[ $PG == 1 ]]; then
            PGDATA=$dir/pg/data
            mkdir -p "$dir/pg" && chown postgres: "$dir/pg"
            say "scan: initdb on the class volume"
            setpriv --reuid=postgres --regid=postgres --init-groups -- "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust -E UTF8 >/dev/null
            port=$((20000 + RANDOM % 20000))
            setpriv --reuid=postgres --regid=postgres --init-groups -- "$PGBIN/pg_ctl" -D "$PGDATA" -o "-k $dir/pg -h 127.0.0.1 -p $port" -l "$dir/pg/log" -w start >/dev/null
        fi
        for r in $(seq 1 "$ROUNDS"); do
            j=$OUT/scan-$c-$r
            "$MF" scan "$dir/tree" --cold --json "$j-walk.json" >&2
            walk=$(secs "$j-walk.json")
            rm -f "$dir"/index.db*
            "$MF" scan "$dir/tree" --cold --durable --db "sqlite:$dir/index.db" --json "$j-sqlite.json" >&2
            sq=$(secs "$j-sqlite.json")
            pg=—
            if [[ $PG == 1 ]]; then
                psql="$PGBIN/psql -q -h 127.0.0.1 -p $port -U postgres -d postgres"
                $psql -c "DROP DATABASE IF EXISTS seed" -c "CREATE DATABASE seed" >/dev/null
                "$MF" scan "$dir/tree" --cold --db "postgres://postgres@127.0.0.1:$port/seed" --json "$j-pg.json" >&2
                pg=$(secs "$j-pg.json")
            fi
            say "scan: $c round $r: walk $walk s, sqlite $sq s, postgres $pg s"
            echo "| $c | $r | $files | $walk | $sq | $pg |"
        done
        pgstop
        "$MF" umount "$dir" >&2
        rmdir "$dir"
        trap - EXIT
    done
    echo
    ;;
bigfile)
    say "bigfile: btrfs, ext4, xfs on class:hdd ($BIG, $RUNS runs)"
    "$MF" bigfile --fs btrfs@class:hdd,ext4@class:hdd,xfs@class:hdd --size "$BIG" --runs "$RUNS" \
        --order sequential --json "$OUT/bigfile.json" --markdown "$OUT/bigfile.md" >&2
    echo "### bigfile: $BIG on btrfs, ext4, xfs on class:hdd, $RUNS runs"
    echo
    cat "$OUT/bigfile.md"
    echo
    python3 - "$OUT/bigfile.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print("Write loop + close per run, in run order (s):\n")
rows = {}
labels = {t.get("id"): t.get("label") or t.get("id") for t in d.get("targets", [])}
for m in d.get("measurements", []):
    if m.get("op") in ("bigfile-write", "bigfile-close"):
        key = labels.get(m["target"], m["target"])
        rows.setdefault(key, {}).setdefault(m["run"], 0.0)
        rows[key][m["run"]] += m["elapsed_s"]
for k, v in rows.items():
    print(f"- {k}: " + ", ".join(f"{v[r]:.2f}" for r in sorted(v)))
EOF
    echo
    ;;
*) echo "class_seeds: unknown job '$job' (copy, scan, bigfile)" >&2; exit 2 ;;
esac
done
