#!/usr/bin/env bash
# Plots a rpma_bench CSV: write+flush latency against payload size, rpma and
# raw TCP (median and p99). Usage: bench/plot.sh results.csv [out.png]
set -euo pipefail
csv=${1:?usage: bench/plot.sh results.csv [out.png]}
png=${2:-${csv%.csv}.png}
command -v gnuplot >/dev/null || { echo "gnuplot missing: run tools/install-deps.sh" >&2; exit 1; }
data=$(mktemp)
trap 'rm -f "$data"' EXIT
grep '^write_flush_latency,' "$csv" | cut -d, -f2- | tr , ' ' > "$data"
gnuplot <<GP
set terminal pngcairo size 900,560 font ",11"
set output "$png"
set title "write + persistent flush latency (rpma vs raw TCP round trip, loopback)"
set xlabel "payload (bytes)"
set ylabel "latency (us)"
set logscale xy
set grid
set key top left
plot "$data" using 1:2 with linespoints lw 2 title "rpma median", \
     "$data" using 1:3 with lines dt 2 title "rpma p99", \
     "$data" using 1:4 with linespoints lw 2 title "raw TCP median", \
     "$data" using 1:5 with lines dt 2 title "raw TCP p99"
GP
echo "wrote $png"
