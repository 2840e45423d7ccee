#!/usr/bin/env bash
# The benchmark runs end to end (its workloads verify their data and exit
# non-zero on any failure); performance is reported, not asserted.
set -euo pipefail
bench="$TEST_SRCDIR/$TEST_WORKSPACE/bench/rpma_bench"
out="$TEST_TMPDIR/bench.csv"
"$bench" --quick --csv "$out"
test "$(wc -l < "$out")" -eq 14  # header + 13 measurements

# The CSV plots: one median/p99 series per measured transport, a PNG out.
plotted=$("$TEST_SRCDIR/$TEST_WORKSPACE/bench/plot.sh" "$out" "$TEST_TMPDIR/bench.png")
grep -qx "series: rpma" <<<"$plotted"
grep -qx "series: raw TCP" <<<"$plotted"
file "$TEST_TMPDIR/bench.png" | grep -q "PNG image data"
