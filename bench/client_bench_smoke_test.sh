#!/usr/bin/env bash
# client_bench runs end to end against three real rpmads (any failure to
# start, connect, replicate or persist exits non-zero) and reports every
# row (the depth rows and floors too, and its depth CSV plots); the numbers
# are printed, not asserted.
set -euo pipefail
root="$TEST_SRCDIR/$TEST_WORKSPACE"
out="$TEST_TMPDIR/client_bench.out"
csv="$TEST_TMPDIR/client_bench.csv"
"$root/bench/client_bench" --quick --rpmad "$root/daemon/rpmad" --csv "$csv" | tee "$out"
for row in "write+persist, 1 replica *4 KiB" "write+persist, 3 replicas *4 KiB" \
    "stream, 1 replica, registered *1 MiB" "stream, 1 replica, staged *1 MiB"; do
    grep -q "^$row" "$out" || { echo "missing row: $row" >&2; exit 1; }
done
grep -Eq "^all floors met|^SOME FLOORS NOT MET" "$out"
test "$(wc -l < "$csv")" -eq 5  # header + 4 rows
for series in "library, 1 replica" "library, 3 replicas" "bare rpma_core" "raw TCP" \
    "library, 1 replica, proxied" "library, 3 replicas, proxied" "gRPC x 3, msync"; do
    for depth in 1 4 16 64; do
        grep -Eq "^$series +$depth +[0-9]+ " "$out" ||
            { echo "missing depth row: $series at depth $depth" >&2; exit 1; }
    done
done
for floor in "1 replica depth 16 / bare rpma_core depth 16" \
    "1 replica depth 16 / 1 replica depth 1" "3 replicas depth 16 / 3 replicas depth 1" \
    "proxied: 3 / 1 replica p50 latency at depth 1" "proxied: 3 / 1 replica IOPS at depth 16"; do
    grep -Eq "^  $floor +[0-9.]+ +[<>]= [0-9.]+ +(PASS|BELOW)$" "$out" ||
        { echo "missing floor: $floor" >&2; exit 1; }
done
grep -q "^  bare rpma_core depth 16 / raw TCP depth 16 " "$out"
for replicas in "3 replicas" "1 replica"; do
    for depth in 1 16; do
        grep -q "^  $replicas / gRPC x 3 p50 latency at depth $depth " "$out"
    done
done
depth_csv="$TEST_TMPDIR/client_bench-depth.csv"
test "$(wc -l < "$depth_csv")" -eq 5  # header + depths 1, 4, 16, 64
"$root/bench/plot.sh" "$depth_csv" "$TEST_TMPDIR/depth.png"
test -s "$TEST_TMPDIR/depth.png"
# Nothing is left behind: the run's directory is removed at the end.
test -z "$(find "$TEST_TMPDIR" -maxdepth 1 -name 'client_bench.*' -type d)"
