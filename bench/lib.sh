# Shared plumbing of the bench scripts (sourced, not run): a work directory in RAM that
# is removed on every exit path, a fresh ext4 on a loop device over an image there, and
# the machine lines every result starts with.
#
#   WORK=/dev/shm/NAME-$$; source "$ROOT/bench/lib.sh"; bench_setup
#   bench_build [cargo options...]             → release build (or MF_BIN's), $MF a copy of it in $WORK
#   fresh_ext4 SIZE [mkfs.ext4 options...]     → ext4 mounted at $MNT
#   bench_header TITLE COMMAND VERSIONS        → Markdown lines: title, command, date, machine
#   busy                                       → busy jiffies of all CPUs so far (steal included)
#   wait_quiet                                 → until others use < QUIET_CORES (0.3) cores, ≤ QUIET_MAX (60) s
#   quiesce                                    → sync, drop caches when CACHE=cold (as root), wait_quiet
#   refuse_debug_build BIN                     → exit 2 when BIN is a debug build (ALLOW_DEBUG=1: allowed)
#   timed CMD...                               → wall, user, sys, max RSS of CMD to $WORK/last
#   export_of DIR                              → the export's mount point of the share mounted at DIR
# A script may set DISK_WORK to a directory elsewhere that cleanup removes too.

MNT=$WORK/mnt
IMG=$WORK/ext4.img
LOOP=""
DISK_WORK=""

bench_cleanup() {
    local rc=$?
    set +e
    if mountpoint -q "$MNT" 2>/dev/null; then umount "$MNT" || umount -l "$MNT"; fi
    if [ -n "$LOOP" ]; then losetup -d "$LOOP" 2>/dev/null; fi
    if [ -n "$DISK_WORK" ]; then rm -rf "$DISK_WORK"; fi
    rm -rf "$WORK"
    exit $rc
}

bench_setup() {
    trap bench_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    mkdir -p "$WORK"
}

bench_build() {
    mkdir -p "$WORK"
    # MF_BIN: a release binary built already (a fat-LTO build takes ~10 minutes here).
    if [ -n "${MF_BIN:-}" ]; then
        refuse_debug_build "$MF_BIN"
        cp "$MF_BIN" "$WORK/manyfiles"
    else
        echo "building manyfiles (release${*:+ $*})..." >&2
        (cd "$ROOT" && cargo build --release --quiet "$@")
        # A copy: a cargo build during the runs would otherwise swap the binary under them.
        cp "$ROOT/target/release/manyfiles" "$WORK/manyfiles"
    fi
    MF=$WORK/manyfiles
}

# A fresh ext4 over a new image of SIZE, mounted at $MNT (an earlier one is unmounted).
# Inode tables and journal are initialised now, so no ext4lazyinit runs during the runs.
fresh_ext4() {
    local size=$1
    shift
    if [ -n "$LOOP" ]; then umount "$MNT"; losetup -d "$LOOP"; LOOP=""; fi
    rm -f "$IMG"
    truncate -s "$size" "$IMG"
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$@" "$IMG"
    LOOP=$(losetup -f --show "$IMG")
    mkdir -p "$MNT"
    mount "$LOOP" "$MNT"
}

# bench_header TITLE COMMAND VERSIONS: where the figures below come from.
bench_header() {
    local cpu ram
    cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
    ram=$(awk '/^MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)
    echo "## $1"
    echo
    echo "- command: \`$2\`"
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- machine: $cpu, $(nproc) cores, $ram RAM, kernel $(uname -r)"
    echo "- manyfiles: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null || echo '?')$(cd "$ROOT" && git diff --quiet HEAD -- src 2>/dev/null || echo ' + uncommitted changes in src/'), $3"
    echo
}

# refuse_debug_build BIN: exit 2 when BIN is a debug build (its symbols hold the standard
# library's debug-assertion checks, `precondition_check`, which a release build inlines
# away), unless ALLOW_DEBUG=1. Issue 41's "22% slower" compared a debug build (5× the
# user-space instructions of a release build for the same scan) with a release build.
refuse_debug_build() {
    if [ "${ALLOW_DEBUG:-0}" != 1 ] && nm "$1" 2>/dev/null | grep -q 'precondition_check'; then
        echo "$1 is a debug build (debug assertions compiled in): timing it against a release build measures the build profile; build with --release, or ALLOW_DEBUG=1" >&2
        exit 2
    fi
}

# Busy jiffies of all CPUs so far (user, nice, system, irq, softirq, steal): differences
# over a run give the CPU time everything on the machine used meanwhile.
busy() { local _ u n s i w q sq st; read -r _ u n s i w q sq st _ < /proc/stat; echo $((u + n + s + q + sq + st)); }

HZ=$(getconf CLK_TCK)
# Wait (up to QUIET_MAX s, default 60) until other processes use less than QUIET_CORES
# (default 0.3) cores: the machine may be shared.
wait_quiet() {
    local t=0 b0 b1
    while :; do
        b0=$(busy); sleep 1; b1=$(busy)
        if python3 -c "import sys; sys.exit(0 if ($b1 - $b0) / $HZ < ${QUIET_CORES:-0.3} else 1)"; then return; fi
        t=$((t + 1))
        if [ "$t" -ge "${QUIET_MAX:-60}" ]; then echo "  (not quiet after ${QUIET_MAX:-60}s, running anyway)" >&2; return; fi
    done
}

# Before a timed run: write back, drop the caches with CACHE=cold (the default; as root),
# keep them with CACHE=warm; then wait_quiet.
quiesce() {
    sync
    if [ "${CACHE:-cold}" = cold ] && [ "$(id -u)" = 0 ]; then echo 3 > /proc/sys/vm/drop_caches; fi
    wait_quiet
}

# timed CMD...: wall seconds (bash's EPOCHREALTIME), user and sys CPU seconds and peak RSS
# (KiB, from /usr/bin/time) to $WORK/last; fails when CMD fails.
timed() {
    local t0 t1 u s m
    t0=$EPOCHREALTIME
    /usr/bin/time -f '%U %S %M' -o "$WORK/time" "$@" >/dev/null
    t1=$EPOCHREALTIME
    read -r u s m < "$WORK/time"
    echo "$(python3 -c "print(f'{$t1 - $t0:.4f}')") $u $s $m" > "$WORK/last"
}

# The export's mount point of the share mounted at $1 (the registry's records: the
# client's record and the export's share one stack directory).
export_of() {
    python3 - "$1" <<'EOF'
import glob, json, os, sys
mp = os.path.realpath(sys.argv[1])
recs = []
for p in glob.glob("/run/manyfiles/*.json") + glob.glob("/run/manyfiles/*.mount"):  # mount records: .mount
    try:
        recs.append(json.load(open(p)))
    except Exception:
        pass
client = [r for r in recs if r.get("mount_point") == mp and r.get("share_dir") and r.get("fuse_source")]
if not client:
    sys.exit(f"no share client record for {mp}")
export = [r for r in recs if r.get("share_dir") == client[0]["share_dir"] and not r.get("fuse_source")]
if not export:
    sys.exit(f"no export record for {mp}")
print(export[0]["mount_point"])
EOF
}
