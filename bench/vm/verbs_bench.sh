#!/usr/bin/env bash
# The benchmark on real verbs: boots one Soft-RoCE VM (tests/vm tier) and, in
# that one boot, runs perftest (ib_read_lat, ib_write_lat, ib_write_bw) and
# rpma_bench on the verbs provider over rxe0, then prints them side by side.
# Floor: rpma_read latency (8 B, 4 KiB) at most 1.2x ib_read_lat, both full
# round trips with busy polling.
#
#   bazel run //bench/vm:verbs_bench [-- --keep DIR]
#
# Absolute numbers are those of an emulated machine (qemu TCG); the ratios
# are what to read.
set -euo pipefail
runfiles=${RUNFILES_DIR:-$0.runfiles}/rpma
if [ "${1:-}" = --keep ] && [ -n "${2:-}" ]; then
    keep=$(mkdir -p "$2" && cd "$2" && pwd)
else
    keep=$(mktemp -d)
fi

echo "verbs_bench: booting a Soft-RoCE VM; the whole run takes about 15 minutes under TCG..." >&2
cd "$runfiles"
status=0
# Two vCPUs: perftest's latency tests spin on both ends at once, and on one
# vCPU each iteration would wait out a scheduler tick.
VM_SMP=2 tests/vm/run_vm.sh --nodes 1 --vm-timeout 1800 --keep "$keep" \
    --case verbs_bench 1 1700 'sh bench/vm/vm_bench.sh' \
    --file bench/vm/vm_bench.sh --file bench/rpma_bench \
    --file /usr/bin/ib_read_lat --file /usr/bin/ib_write_lat --file /usr/bin/ib_write_bw \
    >"$keep/run_vm.log" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
    cat "$keep/run_vm.log" >&2
    echo "verbs_bench: the VM run failed (consoles in $keep)" >&2
    exit 1
fi

# "[verbs_bench] BENCH <tool> <metric> <size> <value>"
sed -n 's/^\[verbs_bench\] BENCH //p' "$keep/vm-node1-console.log" | tr -d '\r' >"$keep/bench.txt"
# The median of a measurement's rounds (one value: that value); perftest
# sometimes prints "inf" for a statistic, which is no measurement.
value() {
    awk -v t="$1" -v m="$2" -v s="$3" '$1 == t && $2 == m && $3 == s && $4 ~ /^[0-9.]+$/ { print $4 }' \
        "$keep/bench.txt" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}

printf '\n%-26s %8s %12s %-14s %12s %9s  %s\n' workload size rpma baseline "" rpma/base floor
missed=0
row() { # label metric size baseline-tool baseline-metric floor(ratio limit or -) higher-is-better
    local rpma base ratio verdict=-
    rpma=$(value rpma "$2" "$3")
    base=$(value "$4" "$5" "$3")
    if [ -z "$rpma" ] || [ -z "$base" ]; then
        echo "verbs_bench: no result for $1 $3 (rpma '$rpma', $4 '$base'); see $keep" >&2
        missed=1
        return
    fi
    ratio=$(awk -v a="$rpma" -v b="$base" 'BEGIN { printf "%.2f", a / b }')
    if [ "$6" != - ]; then
        if awk -v r="$ratio" -v f="$6" -v h="$7" 'BEGIN { exit !(h ? r >= f : r <= f) }'; then
            verdict="$([ "$7" = 1 ] && echo '>=' || echo '<=') $6 met"
        else
            verdict="$([ "$7" = 1 ] && echo '>=' || echo '<=') $6 MISSED"
            missed=1
        fi
    fi
    printf '%-26s %8s %12.1f %-14s %12.1f %9s  %s\n' "$1" "$3" "$rpma" "$4" "$base" "$ratio" "$verdict"
}
row "read latency (us)" read_latency 8 ib_read_lat read_latency 1.2 0
row "read latency (us)" read_latency 4096 ib_read_lat read_latency 1.2 0
row "write+flush latency (us)" write_flush_latency 8 ib_write_lat write_round_trip - 0
row "write+flush latency (us)" write_flush_latency 4096 ib_write_lat write_round_trip - 0
row "stream write (MiB/s)" stream_write 65536 ib_write_bw stream_write - 1
row "stream write (MiB/s)" stream_write 1048576 ib_write_bw stream_write - 1
echo "(medians; read latency: the median of five alternating rounds after a warm-up round; rpma write+flush is a write plus an APM flush read; ib_write_lat is shown as"
echo " the round trip of a write, twice the half round trip it reports)"
grep '^info ' "$keep/bench.txt" | sed 's/^info /(VM /; s/ - / /; s/$/)/' || true
exit "$missed"
