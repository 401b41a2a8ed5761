#!/usr/bin/env bash
# Validate device classes against their model: for each class given (default: every
# preset), `manyfiles mount ext4@class:NAME` on a temporary directory, fio 4 KiB random
# reads (O_DIRECT, libaio) at queue depth 1 and 32 on a 256 MiB file in it, IOPS and mean
# latency printed beside what the class's model expects (from `manyfiles mount`), and
# whether qd 32 is within ±10% of it; the same for 4 KiB random writes (expected from the
# write delay and the slots), and sequential 1 MiB reads and writes at queue depth 1 in
# MiB/s beside the class's bw (not judged: the model charges every request its whole
# latency, so a class streams below its bw unless requests are large; see README); then
# `manyfiles umount`. Root; needs fio, nbdkit,
# nbdfuse (Debian: fio nbdkit libnbd-bin). Timing is machine-dependent: this is a bench,
# not a CI test. Usage: bench/device_classes.sh [--bin PATH] [--runtime S] [CLASS...]
set -euo pipefail
bin=target/release/manyfiles
runtime=15
while [[ $# -gt 0 ]]; do
    case "$1" in
        --bin) bin=$2; shift 2 ;;
        --runtime) runtime=$2; shift 2 ;;
        *) break ;;
    esac
done
classes=("$@")
[[ ${#classes[@]} -gt 0 ]] || classes=(hdd usb2-stick usb3-stick sd-card ebs-magnetic ebs-gp2 ebs-io1)
for t in fio nbdkit nbdfuse python3; do
    command -v "$t" >/dev/null || { echo "device_classes: $t not found (Debian: fio nbdkit libnbd-bin python3)" >&2; exit 2; }
done
[[ $(id -u) -eq 0 ]] || { echo "device_classes: needs root" >&2; exit 2; }

echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cores · $("$bin" --version | head -1) · $(nbdkit --version | head -1) · $(nbdfuse --version | head -1) · $(fio --version)"
printf '%-13s %6s %9s %9s %10s %9s %9s %10s  %s\n' class qd1-exp qd1-IOPS qd1-lat qd32-exp qd32-IOPS qd32-lat qd32/exp verdict
# fio on FILE: RW (randread, randwrite, read, write) in blocks of BS at queue depth QD,
# O_DIRECT, for $runtime s; prints "IOPS mean-latency-ms MiB/s".
fio_on() {
    fio --name=mf --filename="$1" --size=256M --rw="$2" --bs="$3" --direct=1 --ioengine=libaio \
        --iodepth="$4" --runtime="$runtime" --time_based --ramp_time=2 --output-format=json |
        python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; r=j["write" if "write" in sys.argv[1] else "read"]; print("%.0f %.2f %.1f" % (r["iops"], r["lat_ns"]["mean"]/1e6, r["bw_bytes"]/1048576))' "$2"
}
fail=0
writes=()
for c in "${classes[@]}"; do
    dir=$(mktemp -d /var/tmp/mf-class-XXXXXX)
    trap '"$bin" umount "$dir" >/dev/null 2>&1 || true; rmdir "$dir" 2>/dev/null || true' EXIT
    line=$("$bin" mount "ext4@class:$c" "$dir" --size 1GiB | head -1)
    # "... expected read IOPS A at qd 1, B at qd ≥ Q) ..."
    read -r exp1 expq < <(python3 -c 'import re,sys; m=re.search(r"expected read IOPS (\S+) at qd 1, (\S+) at qd", sys.argv[1]); print(m.group(1), m.group(2))' "$line")
    fio --name=lay --filename="$dir/f" --size=256M --rw=write --bs=1M --direct=1 --ioengine=libaio --iodepth=8 >/dev/null
    res=($(fio_on "$dir/f" randread 4k 1 | cut -d' ' -f1,2) $(fio_on "$dir/f" randread 4k 32 | cut -d' ' -f1,2))
    ratio=$(python3 -c "print('%.3f' % (${res[2]}/$expq))")
    verdict=$(python3 -c "r=${res[2]}/$expq; q1=${res[0]}; print('ok' if abs(r-1)<=0.10 and q1<=${res[2]}*1.05 else 'OFF')")
    [[ $verdict == ok ]] || fail=1
    printf '%-13s %6s %9s %8sms %10s %9s %8sms %10s  %s\n' "$c" "$exp1" "${res[0]}" "${res[1]}" "$expq" "${res[2]}" "${res[3]}" "$ratio" "$verdict"
    # Writes: the model's IOPS from the write delay and the slots ("write N ms", "N thread(s)").
    read -r wexp1 wexpq < <(python3 -c 'import re,sys; d=int(re.search(r"write (\d+) ms", sys.argv[1]).group(1)); q=int(re.search(r"\((\d+) thread", sys.argv[1]).group(1)); print("%.0f %.0f" % (1000/d, q*1000/d) if d else "- -")' "$line")
    w=($(fio_on "$dir/f" randwrite 4k 1 | cut -d' ' -f1,2) $(fio_on "$dir/f" randwrite 4k 32 | cut -d' ' -f1,2))
    seq=($(fio_on "$dir/f" read 1M 1 | cut -d' ' -f3) $(fio_on "$dir/f" write 1M 1 | cut -d' ' -f3))
    wverdict=$(python3 -c "e='$wexpq'; print('-' if e=='-' else ('ok' if abs(${w[2]}/float(e)-1)<=0.10 and ${w[0]}<=${w[2]}*1.05 else 'OFF'))")
    writes+=("$(printf '| %s | %s | %s | %s ms | %s | %s | %s ms | %s | %s | %s |' "$c" "$wexp1" "${w[0]}" "${w[1]}" "$wexpq" "${w[2]}" "${w[3]}" "$wverdict" "${seq[0]}" "${seq[1]}")")
    "$bin" umount "$dir" >/dev/null
    rmdir "$dir"
    trap - EXIT
done
echo
echo "| class | randwrite qd 1: model | IOPS | latency | qd 32: model | IOPS | latency | within 10% | seq read 1 MiB qd 1, MiB/s | seq write, MiB/s |"
echo "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"
printf '%s\n' "${writes[@]}"
exit $fail
