#!/usr/bin/env bash
# Runs a libFuzzer target for a bounded time over its seed corpus and fails on
# any crash, sanitizer report or violated invariant. A crashing input is saved
# to the test's undeclared outputs (bazel-testlogs/.../test.outputs/).
#
#   run_fuzzer.sh FUZZER CORPUS_DIR [libFuzzer flags...]
set -euo pipefail

fuzzer=$1
corpus=$2
shift 2
scratch=${TEST_TMPDIR:-$(mktemp -d)}
artifacts=${TEST_UNDECLARED_OUTPUTS_DIR:-$scratch}

# libFuzzer adds new inputs to its first corpus directory: give it a copy, so
# that the checked-in seeds (behind runfiles symlinks) are never written.
mkdir -p "$scratch/corpus"
cp "$corpus"/* "$scratch/corpus/"

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

status=0
"$fuzzer" -artifact_prefix="$artifacts/" -print_final_stats=1 "$@" "$scratch/corpus" \
    >"$scratch/fuzz.log" 2>&1 || status=$?
cat "$scratch/fuzz.log"

if [ "$status" -ne 0 ]; then
    echo "FAIL: $(basename "$fuzzer") exited with status $status; input saved in $artifacts"
    exit 1
fi
if grep -q -e 'ERROR: ' -e 'runtime error:' -e 'invariant violated' "$scratch/fuzz.log"; then
    echo "FAIL: $(basename "$fuzzer") reported an error (see above)"
    exit 1
fi
if ! grep -q '^Done [0-9]* runs' "$scratch/fuzz.log"; then
    echo "FAIL: $(basename "$fuzzer") did not finish its run"
    exit 1
fi
echo "PASS: $(grep '^Done' "$scratch/fuzz.log")"
