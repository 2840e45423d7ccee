#!/usr/bin/env bash
# The drop-in proof: one binary built against Debian's librpma.h and -lrpma
# runs twice -- once with LD_LIBRARY_PATH selecting our librpma.so.0, once with
# Debian's -- and both runs must pass every check and print the same check
# lines. Only the "library:" line, which names the loaded library, may differ.
#
#   dropin_test.sh DROPIN OUR_LIBRPMA_SO
set -euo pipefail

dropin=$1
ours=$2
debian=/usr/lib/x86_64-linux-gnu/librpma.so.0
out=${TEST_UNDECLARED_OUTPUTS_DIR:-${TEST_TMPDIR:-/tmp}}

ours_dir=$(cd "$(dirname "$ours")" && pwd)
status=0
LD_LIBRARY_PATH=$ours_dir "$dropin" "$ours_dir/$(basename "$ours")" >"$out/ours.txt" ||
    status=1
env -u LD_LIBRARY_PATH "$dropin" "$debian" >"$out/debian.txt" || status=$((status | 2))

echo "=== with our librpma.so.0 (LD_LIBRARY_PATH=$ours_dir)"
cat "$out/ours.txt"
echo "=== with Debian's librpma.so.0"
cat "$out/debian.txt"
echo "==="

if [ $((status & 2)) -ne 0 ]; then
    echo "FAIL: Debian's librpma fails a check above: the check, not our library, is wrong"
fi
if [ $((status & 1)) -ne 0 ]; then
    echo "FAIL: our librpma.so.0 fails a check above"
fi
if ! grep -q '^library: .*(not Debian.s librpma)$' "$out/ours.txt"; then
    echo "FAIL: the run with LD_LIBRARY_PATH did not load our librpma.so.0"
    status=1
fi
if ! grep -q '^library: .*(Debian.s librpma)$' "$out/debian.txt"; then
    echo "FAIL: the run without LD_LIBRARY_PATH did not load Debian's librpma.so.0"
    status=1
fi
if ! diff -u --label debian --label ours <(grep -v '^library:' "$out/debian.txt") \
    <(grep -v '^library:' "$out/ours.txt"); then
    echo "FAIL: the two runs printed different check lines (diff above)"
    status=1
fi
checks=$(grep -c '^ok ' "$out/ours.txt" || true)
if [ "$status" -ne 0 ]; then
    exit 1
fi
echo "PASS: $checks checks, identical with our and Debian's librpma.so.0"
