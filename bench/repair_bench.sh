#!/usr/bin/env bash
# repair_bench: what `rpmactl region repair` costs (issue 20: "repairing a
# 64 GiB region that missed 1 MiB must not copy 64 GiB; measure both
# cases"). Three rpmads on loopback (tcp provider), a region of SIZE filled
# with random bytes on all three, then two cases on replica 2:
#   missed  its rpmad SIGKILLed, MISSED bytes put with --quorum 2 while it is
#           down, restarted: repair compares every extent, copies ~MISSED;
#   all     its rpmad replaced by a new one on an empty pool (another daemon
#           identity at the address, the region gone): repair copies it all.
# Prints one row per case: bytes compared, bytes copied, seconds, and the
# rate of comparing.
#
#   bazel run -c opt //bench:repair_bench -- [--size 1GiB] [--missed 1MiB] [--json]
#   repair_bench.sh --rpmad PATH --rpmactl PATH [...]   (outside bazel run)
set -euo pipefail

size=1GiB
missed=1MiB
json=0
here=$(cd "$(dirname "$0")" && pwd)
rpmad=""
rpmactl=""
while [ $# -gt 0 ]; do
    case $1 in
    --size) size=$2; shift 2 ;;
    --missed) missed=$2; shift 2 ;;
    --rpmad) rpmad=$2; shift 2 ;;
    --rpmactl) rpmactl=$2; shift 2 ;;
    --json) json=1; shift ;;
    -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "repair_bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
# Runfiles (bazel run / test), else the bazel-bin tree next to the script.
find_tool() {
    local rel=$1
    for candidate in "${RUNFILES_DIR:-/nonexistent}/rpma/$rel" "$here/../$rel" \
        "${TEST_SRCDIR:-/nonexistent}/${TEST_WORKSPACE:-rpma}/$rel" "$here/../bazel-bin/$rel"; do
        [ -x "$candidate" ] && { echo "$candidate"; return; }
    done
    echo "repair_bench: cannot find $rel (give --rpmad/--rpmactl)" >&2
    exit 2
}
[ -n "$rpmad" ] || rpmad=$(find_tool daemon/rpmad)
[ -n "$rpmactl" ] || rpmactl=$(find_tool client/rpmactl/rpmactl)

bytes() { # SIZE with a binary suffix -> bytes
    local n=${1%[KkMmGg]*} unit=${1#"${1%[KkMmGg]*}"}
    case ${unit,,} in
    "") echo "$n" ;;
    k | kib) echo $((n << 10)) ;;
    m | mib) echo $((n << 20)) ;;
    g | gib) echo $((n << 30)) ;;
    *) echo "repair_bench: cannot read size $1 (use KiB, MiB or GiB)" >&2; exit 2 ;;
    esac
}
size_bytes=$(bytes "$size")
missed_bytes=$(bytes "$missed")
[ "$missed_bytes" -le "$size_bytes" ] || { echo "repair_bench: --missed exceeds --size" >&2; exit 2; }

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/repair_bench.XXXXXX")
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# free_ports N: N distinct ports nothing is bound to, drawn from the half
# below the kernel's ephemeral range as tests/support/free_port.h does (a
# port from bind(0) could be some connection's local port by the time rpmad
# binds it).
free_ports() {
    python3 - "$1" <<'PY'
import random, socket, sys
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
ports = []
for _ in range(1000):
    port = random.randrange(low // 2, low)
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            continue
    if port not in ports:
        ports.append(port)
    if len(ports) == int(sys.argv[1]):
        break
else:
    raise SystemExit("repair_bench: not enough free ports below the ephemeral range")
print(*ports)
PY
}
read -r -a ports <<<"$(free_ports 6)"
declare -a control data
for i in 0 1 2; do
    control[i]=${ports[2 * i]}
    data[i]=${ports[2 * i + 1]}
done
# start I: rpmad I on pool $work/poolI, waits for its ready line.
start() {
    local i=$1 log="$work/rpmad$1.log"
    mkdir -p "$work/pool$i"
    "$rpmad" --pool-dir "$work/pool$i" --listen "127.0.0.1:${control[i]}" \
        --data-listen "127.0.0.1:${data[i]}" --provider tcp >"$log" 2>&1 &
    pids[i]=$!
    for _ in $(seq 200); do
        grep -q "^rpmad: ready:" "$log" && return
        kill -0 "${pids[i]}" 2>/dev/null || break
        sleep 0.05
    done
    echo "repair_bench: rpmad $i did not start:" >&2
    cat "$log" >&2
    exit 1
}
stop() { kill -9 "${pids[$1]}"; wait "${pids[$1]}" 2>/dev/null || true; }
servers=()
for i in 0 1 2; do
    start "$i"
    servers+=(--server "127.0.0.1:${control[i]}")
done
ctl() { "$rpmactl" "${servers[@]}" "$@"; }
# must WHAT CMD...: runs CMD with its stderr kept aside; on failure says WHAT
# failed and shows that stderr (a quiet success keeps the rows readable).
must() {
    local what=$1
    shift
    "$@" 2>"$work/stderr" || {
        echo "repair_bench: $what failed (exit $?):" >&2
        cat "$work/stderr" >&2
        for log in "$work"/rpmad*.log; do
            echo "--- the last lines of $(basename "$log")" >&2
            tail -n 8 "$log" >&2
        done
        exit 1
    }
}

echo "repair_bench: filling a $size region on three rpmads" >&2
head -c "$size_bytes" /dev/urandom >"$work/fill"
must "filling the region" ctl put "$work/fill" bench --size "$size_bytes" >/dev/null
rm -f "$work/fill"

# repair CASE: runs the repair, prints its row.
rows=()
repair() {
    local case=$1 out="$work/repair.$1.json"
    must "the repair ($case)" ctl --json region repair bench >"$out"
    rows+=("$(python3 - "$case" "$out" <<'EOF'
import json, sys
case, path = sys.argv[1], sys.argv[2]
r = json.load(open(path))
(one,) = r["repaired"]
assert one["result"] == "repaired", one
rate = one["bytes_compared"] / one["seconds"] / 2**20 if one["seconds"] > 0 else 0
print(json.dumps({"case": case, "size": r["size"], "bytes_compared": one["bytes_compared"],
                  "bytes_copied": one["bytes_copied"], "seconds": one["seconds"],
                  "compared_mib_per_second": rate}))
EOF
)")
}

# Case missed: replica 2 down while MISSED bytes are put in the middle.
head -c "$missed_bytes" /dev/urandom >"$work/missed"
stop 2
ctl put "$work/missed" "bench:$(((size_bytes - missed_bytes) / 2 / 4096 * 4096))" --quorum 2 \
    >/dev/null 2>&1 || true # exit 1: durable on 2 of 3, as expected
start 2
repair missed

# Case all: replica 2's rpmad replaced by one on an empty pool.
stop 2
rm -rf "$work/pool2"
start 2
repair all

ctl verify bench >/dev/null 2>&1 || { echo "repair_bench: replicas differ after the repairs" >&2; exit 1; }

if [ "$json" = 1 ]; then
    printf '%s\n' "${rows[@]}" | python3 -c 'import json,sys; print(json.dumps([json.loads(l) for l in sys.stdin], indent=2))'
else
    printf '%s\n' "${rows[@]}" | python3 -c '
import json, sys
print("%-8s %12s %14s %14s %9s %14s" % ("case", "region", "compared", "copied", "seconds", "compare MiB/s"))
for line in sys.stdin:
    r = json.loads(line)
    print("%-8s %12d %14d %14d %9.3f %14.0f" % (r["case"], r["size"], r["bytes_compared"],
          r["bytes_copied"], r["seconds"], r["compared_mib_per_second"]))'
fi
