#!/usr/bin/env bash
# Scenario 10 (load): FILES files through create (gen), copy, sync (no-op), scan and
# delete (sync --delete from an empty source) with THREADS threads; wall time and peak
# RSS of each step from GNU time. FLAT=1 puts every file in one directory (scenario 6:
# 1,000,000 entries in one directory). Usage: FILES=1000000 THREADS=8 [FLAT=1] bench/reliability_load.sh [BIN]
set -euo pipefail
BIN=${1:-target/release/manyfiles}
FILES=${FILES:-1000000}
THREADS=${THREADS:-8}
SHAPE=()
[ "${FLAT:-0}" = 1 ] && SHAPE=(--flat)
W=$(mktemp -d "${TMPDIR:-/var/tmp}/mf-load.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir "$W/empty"
step() { # name, command...
    local name=$1; shift
    /usr/bin/time -f "%e %M" -o "$W/t" "$@" >/dev/null 2>"$W/err" || { echo "| $name | failed: $(tail -1 "$W/err") |"; return; }
    read -r secs kib <"$W/t"
    printf '| %s | %s | %.0f | %s |\n' "$name" "$secs" "$(echo "$kib/1024" | bc -l)" "$(echo "$FILES/$secs" | bc)"
}
echo "date: $(date -u +%FT%TZ) · machine: $(uname -n), $(nproc) cores, $(free -g | awk '/Mem/{print $2}') GiB · files: $FILES · threads: $THREADS · flat: ${FLAT:-0} · bin: $BIN"
echo "| step | wall s | peak RSS MiB | files/s |"
echo "| --- | --- | --- | --- |"
step "create (gen, 0 B files)" "$BIN" gen "$W/src" --files "$FILES" --size 0 "${SHAPE[@]}" --threads "$THREADS" -q
step "copy" "$BIN" copy "$W/src" "$W/dst" --threads "$THREADS" -q
step "sync (nothing to do)" "$BIN" sync "$W/src" "$W/dst" --threads "$THREADS" -q
step "scan (sqlite index)" "$BIN" scan "$W/src" --db "sqlite:$W/idx.sqlite" --threads "$THREADS"
step "delete (sync --delete)" "$BIN" sync "$W/empty" "$W/dst" --delete --threads "$THREADS" -q
