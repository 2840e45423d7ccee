#!/bin/sh
# Runs inside a Soft-RoCE VM of the tests/vm tier (busybox sh): perftest's
# ib_read_lat and ib_write_bw, then rpma_bench on the verbs provider, all on
# rxe0 in this one boot. Prints one "BENCH <tool> <metric> <size> <value>"
# line per number (latencies: median microseconds; bandwidth: MiB/s) for
# bench/vm/verbs_bench.sh to tabulate.
set -eu
ip=${VM_IP:?run by the VM tier}
dev=${VM_RDMA_DEV:-rxe0}
iterations=${BENCH_ITERATIONS:-2000}
port=18515

# Waits until a perftest server listens on its TCP exchange port.
wait_listening() {
    i=0
    until netstat -ltn 2>/dev/null | grep -q ":$1 "; do
        i=$((i + 1))
        [ $i -lt 200 ] || { echo "perftest server on port $1 never listened"; return 1; }
        usleep 50000
    done
}

# perftest pair on a fresh port: prints the client's output.
perftest() {
    tool=$1
    shift
    port=$((port + 1))
    "$tool" -d "$dev" -F -p "$port" "$@" >/tmp/perftest-server.log 2>&1 &
    server=$!
    wait_listening "$port"
    "$tool" -d "$dev" -F -p "$port" "$@" "$ip" >/tmp/perftest-client.log 2>&1
    wait "$server"
    cat /tmp/perftest-client.log
}

echo "BENCH info clocksource - $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
# The floor is on read latency, and emulation makes single runs vary by tens
# of percent: perftest and rpma alternate over several rounds, and
# verbs_bench.sh takes the median of each side's round medians. A first,
# unrecorded round of each warms up the emulator's translation caches and the
# pages both tools touch (rpma's first round used to be its slowest).
perftest ib_read_lat -s 8 -n "$iterations" >/dev/null
RPMA_PROVIDER=verbs ./bench/rpma_bench --addr "$ip" --verbs --busy-poll --only read \
    >/tmp/rpma_read.log 2>&1 || { cat /tmp/rpma_read.log; exit 1; }
rounds=5
round=0
while [ $round -lt "$rounds" ]; do
    round=$((round + 1))
    for size in 8 4096; do
        # Columns: #bytes #iterations t_min t_max t_typical t_avg ...
        perftest ib_read_lat -s "$size" -n "$iterations" |
            awk -v s="$size" '$1 == s && NF >= 6 { print "BENCH ib_read_lat read_latency", s, $5 }'
    done
    RPMA_PROVIDER=verbs ./bench/rpma_bench --addr "$ip" --verbs --busy-poll --only read \
        --csv /tmp/rpma-read.csv >/tmp/rpma_read.log 2>&1 || { cat /tmp/rpma_read.log; exit 1; }
    awk -F, 'NR > 1 { print "BENCH rpma", $1, $2, $3 }' /tmp/rpma-read.csv
done
for size in 8 4096; do
    # ib_write_lat reports half a round trip (ping-pong of writes): doubled,
    # it is the round trip that a write + flush is compared with.
    perftest ib_write_lat -s "$size" -n "$iterations" |
        awk -v s="$size" '$1 == s && NF >= 6 { print "BENCH ib_write_lat write_round_trip", s, 2 * $5 }'
done
for size in 65536 1048576; do
    # Columns: #bytes #iterations BW_peak BW_average MsgRate (MB/sec = MiB/s)
    perftest ib_write_bw -s "$size" -n 500 |
        awk -v s="$size" '$1 == s && NF >= 5 { print "BENCH ib_write_bw stream_write", s, $4 }'
done

for kind in write stream; do
    RPMA_PROVIDER=verbs ./bench/rpma_bench --addr "$ip" --verbs --busy-poll --only "$kind" \
        --csv "/tmp/rpma-$kind.csv" >/tmp/rpma_bench.log 2>&1 || { cat /tmp/rpma_bench.log; exit 1; }
done
# workload,size,rpma,...: the workloads named as the lines above name theirs.
awk -F, 'FNR > 1 { print "BENCH rpma", $1, $2, $3 }' /tmp/rpma-write.csv /tmp/rpma-stream.csv
