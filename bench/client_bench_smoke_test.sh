#!/usr/bin/env bash
# client_bench runs end to end against three real rpmads (any failure to
# start, connect, replicate or persist exits non-zero) and reports every
# row; the numbers are printed, not asserted.
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
# Nothing is left behind: the run's directory is removed at the end.
test -z "$(find "$TEST_TMPDIR" -maxdepth 1 -name 'client_bench.*' -type d)"
