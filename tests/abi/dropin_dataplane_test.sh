#!/usr/bin/env bash
# Runs dropin_dataplane (built against Debian's librpma) on our librpma.so.0.
# LD_BIND_NOW makes the loader resolve all 84 functions up front: a missing
# one stops the program before main, and the test fails.
#
#   dropin_dataplane_test.sh DROPIN_DATAPLANE OUR_LIBRPMA_SO
set -euo pipefail
program=$1
ours_dir=$(cd "$(dirname "$2")" && pwd)
if ! LD_BIND_NOW=1 LD_LIBRARY_PATH=$ours_dir RPMA_PROVIDER=tcp \
    RPMA_EXPECT_LIBRARY=$ours_dir/librpma.so.0 "$program"; then
    echo "FAIL: the program did not pass on our librpma.so.0 (output above)"
    exit 1
fi
loaded=$(LD_LIBRARY_PATH=$ours_dir ldd "$program" | awk '/librpma.so.0/ {print $3}')
if [ "$(realpath "$loaded")" != "$(realpath "$ours_dir/librpma.so.0")" ]; then
    echo "FAIL: the loader picks $loaded, not our librpma.so.0"
    exit 1
fi
