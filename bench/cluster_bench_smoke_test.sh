#!/usr/bin/env bash
# cluster_bench runs end to end, small (three etcd members, four rpmads; any
# failure to start, place, open, write, repair or re-place exits non-zero),
# and prints every row with numbers; the numbers are printed, not asserted.
set -euo pipefail
root="$TEST_SRCDIR/$TEST_WORKSPACE"
out="$TEST_TMPDIR/cluster_bench.out"
"$root/bench/cluster_bench" --opens 20 --ops 200 --repair-size 8M --death-size 8M | tee "$out"
num='[0-9]+(\.[0-9]+)?'
for row in "open, by name \(etcd\) / by addresses" "write\+persist 4 KiB, cluster / static"; do
    grep -Eq "^$row +$num +$num +$num +$num +$num$" "$out" ||
        { echo "missing row: $row" >&2; exit 1; }
done
grep -Eq "^  IOPS at depth 1, cluster / static +$num +$num *$" "$out"
grep -Eq "^  floor: cluster / static p50 $num <= 1.05 (PASS|BELOW)$" "$out"
grep -Eq "^repair 8 MiB / put, MB/s +$num +$num +$num$" "$out" ||
    { echo "missing repair row" >&2; exit 1; }
grep -Eq "^  copy only \(REPAIRING seen\) / put, MB/s +$num +$num +$num$" "$out"
grep -Eq "^node death to in sync elsewhere, s \(8 MiB\) +$num$" "$out" ||
    { echo "missing node death row" >&2; exit 1; }
# Nothing is left behind: the run's directory is removed at the end.
test -z "$(find "$TEST_TMPDIR" -maxdepth 1 -name 'cluster_bench.*' -type d)"
