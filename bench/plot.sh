#!/usr/bin/env bash
# Plots the write + persistent flush latency rows of a benchmark CSV against
# payload size, median and p99 of every series the CSV has: rpma_bench's
# (rpma, raw TCP), client_bench's and rpmad_bench's (the subject and its
# baseline), rpmactl bench's (all replicas, one, and each count between).
# Usage: bench/plot.sh results.csv [out.png]
set -euo pipefail
csv=${1:?usage: bench/plot.sh results.csv [out.png]}
png=${2:-${csv%.csv}.png}
command -v gnuplot >/dev/null || { echo "gnuplot missing: run tools/install-deps.sh" >&2; exit 1; }

# A column's name as a person reads it.
label() {
  case $1 in
    rpma) echo "rpma" ;;
    tcp) echo "raw TCP" ;;
    bare_rpma_core) echo "bare rpma_core" ;;
    replicated) echo "all replicas" ;;
    single) echo "1 replica" ;;
    replicas_*) echo "${1#replicas_} replicas" ;;
    *) echo "${1//_/ }" ;;
  esac
}

# Draws the plots=() series into $png: title, x label, y label, scales.
draw() {
  gnuplot <<GP
set terminal pngcairo size 900,560 font ",11"
set output "$png"
set title "$1"
set xlabel "$2"
set ylabel "$3"
$4
set grid
set key top left
plot $(IFS=,; echo "${plots[*]}")
GP
  echo "wrote $png"
}

header=$(head -n 1 "$csv")
IFS=, read -r -a columns <<<"$header"
if [[ ${columns[0]:-} == workload && ${columns[1]:-} == depth ]]; then
  data=$(mktemp)
  trap 'rm -f "$data"' EXIT
  grep '^write_persist_iops,' "$csv" | cut -d, -f2- | tr , ' ' > "$data"
  [[ -s $data ]] || { echo "$csv: no write_persist_iops rows to plot" >&2; exit 1; }
  plots=()
  for ((c = 3; c <= ${#columns[@]}; c++)); do
    name=$(label "${columns[c - 1]}")
    plots+=("\"$data\" using 1:$((c - 1)) with linespoints lw 2 title \"$name\"")
    echo "series: $name"
  done
  draw "4 KiB write + persist IOPS against depth (operations outstanding)" depth IOPS \
    "set logscale x 2; set logscale y"
  exit 0
fi
[[ ${columns[0]:-} == workload && ${columns[1]:-} == size ]] ||
  { echo "$csv: not a benchmark CSV (its header is '$header')" >&2; exit 1; }
data=$(mktemp)
trap 'rm -f "$data"' EXIT
grep '^write_flush_latency,' "$csv" | cut -d, -f2- | tr , ' ' > "$data"
[[ -s $data ]] || { echo "$csv: no write_flush_latency rows to plot" >&2; exit 1; }

# Series are (median, p99) column pairs: 3-4 and 5-6, then the ratio (7),
# then any further pairs. In $data the size is column 1, so CSV column c is
# data column c-1.
plots=()
color=0
for ((c = 3; c + 1 <= ${#columns[@]}; c += 2)); do
  ((c == 7)) && c=8
  ((c + 1 <= ${#columns[@]})) || break
  name=$(label "${columns[c - 1]}")
  color=$((color + 1))
  plots+=("\"$data\" using 1:$((c - 1)) with linespoints lw 2 lc $color title \"$name median\"")
  plots+=("\"$data\" using 1:$c with lines dt 2 lc $color title \"$name p99\"")
  echo "series: $name"
done
draw "write + persistent flush latency (median and p99)" "payload (bytes)" "latency (us)" \
  "set logscale xy"
