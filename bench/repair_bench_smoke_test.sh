#!/usr/bin/env bash
# repair_bench end to end on a small region: the repair of a replica that
# missed 1 MiB copies about that much, the repair of a replaced one copies
# the region, and the replicas are identical after both (the script checks
# with rpmactl verify). Times are printed, not asserted.
set -euo pipefail
root="$TEST_SRCDIR/$TEST_WORKSPACE"
out="$TEST_TMPDIR/repair_bench.json"
"$root/bench/repair_bench.sh" --rpmad "$root/daemon/rpmad" \
    --rpmactl "$root/client/rpmactl/rpmactl" --size 64MiB --missed 1MiB --json | tee "$out"
python3 - "$out" <<'PY'
import json, sys
rows = {r["case"]: r for r in json.load(open(sys.argv[1]))}
mib = 1 << 20
assert rows["missed"]["bytes_compared"] == 64 * mib, rows
assert 0 < rows["missed"]["bytes_copied"] <= 2 * mib, rows
assert rows["all"]["bytes_copied"] >= 63 * mib, rows
print("PASS")
PY
