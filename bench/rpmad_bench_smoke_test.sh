#!/usr/bin/env bash
# rpmad_bench runs end to end against a real rpmad (any failure to start,
# connect or write exits non-zero) and reports every row; the numbers are
# printed, not asserted.
set -euo pipefail
root="$TEST_SRCDIR/$TEST_WORKSPACE"
out="$TEST_TMPDIR/rpmad_bench.out"
csv="$TEST_TMPDIR/rpmad_bench.csv"
"$root/bench/rpmad_bench" --quick --rpmad "$root/daemon/rpmad" --csv "$csv" | tee "$out"
for row in "write+flush latency (us) *64 B" "write+flush latency (us) *4 KiB" \
    "write+flush latency (us) *1 MiB" "OpenSession latency" "RSS at start" \
    "RSS with regions" "RSS +connected sessions" "CPU while idle"; do
    grep -q "^$row" "$out" || { echo "missing row: $row" >&2; exit 1; }
done
grep -Eq "^all floors met|^SOME FLOORS NOT MET" "$out"
test "$(wc -l < "$csv")" -eq 9  # header + 8 rows
# Nothing is left behind: the run's directory is removed at the end.
test -z "$(find "$TEST_TMPDIR" -maxdepth 1 -name 'rpmad_bench.*' -type d)"
