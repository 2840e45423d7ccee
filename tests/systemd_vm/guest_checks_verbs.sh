#!/bin/bash
# Runs inside the systemd VM booted with --rxe (see run_systemd_vm.sh): rpmad
# from its package, under the unit's full hardening, serving its data plane
# on real verbs -- Soft-RoCE (rxe0 over dummy0) -- and rpmactl replicating a
# file through it. One "CHECK name: ..." line per check on the console, then
# "RESULT: PASS" or "RESULT: FAIL why".
# Every program start costs 0.1-0.3 s under TCG: few of them, bash builtins
# otherwise.
exec >/dev/ttyS0 2>&1
. /root/vmtest/env # VERSION
dir=/root/vmtest
control=127.0.0.1:7300
# Only inside the guest: dummy0 carries nothing but rxe0's loopback traffic.
ip=10.0.9.1
data=$ip:7301
counters=/sys/class/infiniband/rxe0/ports/1/hw_counters

. /root/vmtest/guest_lib.sh # finish, fail, ok, show, ms_since, journal
# rpmactl as an operator runs it on an RDMA host: the client library's
# provider chosen like rpmad's (auto would pick verbs here too; verbs makes
# a fallback to tcp an error instead).
rpmactl() { RPMA_PROVIDER=verbs command rpmactl --server $control "$@"; }

check=rxe
out=$(ip addr add $ip/24 dev dummy0 2>&1 && ip link set dummy0 up 2>&1 &&
    rdma link add rxe0 type rxe netdev dummy0 2>&1) || fail "$out"
for ((i = 0; ; i++)); do
    state=$(<"/sys/class/infiniband/rxe0/ports/1/state")
    [[ "$state" == *ACTIVE* ]] && break
    [ $i -lt 100 ] || fail "rxe0 port 1 is '$state' after 10 s"
    read -r -t 0.1 <> <(:) || true
done
for node in /dev/infiniband/uverbs0 /dev/infiniband/rdma_cm; do
    [ -c $node ] || fail "no $node"
done
ok "rxe0 over dummy0 $ip, port $state"

check=install
out=$(dpkg -i "$dir/rpmad_$VERSION.deb" "$dir/rpmactl_$VERSION.deb" 2>&1) || fail "dpkg -i: $out"
show
[ "$P_ActiveState/$P_SubState" = active/running ] || fail "after dpkg -i: $P_ActiveState/$P_SubState"
ok "rpmad $VERSION active"

check=verbs
# What an operator edits: the data plane on the RDMA interface, verbs only.
conf=/etc/rpmad/rpmad.yaml
sed -i -e 's/^  listen: "127.0.0.1:7301"$/  listen: "'$data'"/' \
    -e 's/^  provider: auto$/  provider: verbs/' $conf
conf_text=$(<$conf)
[[ "$conf_text" == *"  listen: \"$data\""* && "$conf_text" == *"  provider: verbs"* ]] ||
    fail "$conf does not have the lines this test edits any more"
since=$(date '+%Y-%m-%d %H:%M:%S')
systemctl restart rpmad.service || fail "systemctl restart rc=$?"
show
[ "$P_ActiveState/$P_SubState" = active/running ] || fail "$P_ActiveState/$P_SubState"
[[ "$P_StatusText" == *"data $data (verbs)"* ]] || fail "STATUS= is '$P_StatusText', want data $data (verbs)"
[[ "$(journal -p info..info --since "$since")" == *"data plane on $data (verbs provider)"* ]] ||
    fail "no 'data plane on $data (verbs provider)' line at priority info"
bad=$(journal -p 0..3 --since "$since")
[ -z "$bad" ] || fail "error lines at start: $bad"
ok "$P_StatusText"

check=devices
# rpmad, as user rpmad inside its DevicePolicy=closed, holds the verbs
# device and the rdma_cm channel open.
pid=$P_MainPID
[ "$(stat -c %U "/proc/$pid")" = rpmad ] || fail "rpmad runs as $(stat -c %U "/proc/$pid")"
fds=$(ls -l "/proc/$pid/fd")
[[ "$fds" == *"/dev/infiniband/uverbs0"* ]] || fail "rpmad has no /dev/infiniband/uverbs0 open: $fds"
[[ "$fds" == *"/dev/infiniband/rdma_cm"* ]] || fail "rpmad has no /dev/infiniband/rdma_cm open: $fds"
ok "uverbs0 and rdma_cm open as user rpmad"

check=put
read -r sent0 <"$counters/sent_pkts"
head -c 1048576 /dev/urandom >"$dir/data.in"
out=$(rpmactl health 2>&1) || fail "health: $out"
out=$(rpmactl put "$dir/data.in" data --create --size 1MiB 2>&1) || fail "put: $out"
out=$(rpmactl get data 1048576 "$dir/data.out" 2>&1) || fail "get: $out"
out=$(cmp "$dir/data.in" "$dir/data.out" 2>&1) || fail "got other bytes back: $out"
read -r sent1 <"$counters/sent_pkts"
# 2 MiB each way in 4 KiB (at most) packets: well over 500 packets on rxe0.
[ $((sent1 - sent0)) -ge 500 ] || fail "rxe0 sent only $((sent1 - sent0)) packets: the data did not cross it"
ok "1 MiB put and got back identical over rxe0 ($((sent1 - sent0)) packets sent)"

check=stop
systemctl stop rpmad.service || fail "systemctl stop rc=$?"
rec=$(</run/rpmad.exit)
[ "$rec" = "SERVICE_RESULT=success EXIT_CODE=exited EXIT_STATUS=0" ] || fail "exit record '$rec'"
bad=$(journal -p 0..3 --since "$since")
[ -z "$bad" ] || fail "error lines: $bad"
ok "$rec"

check=restart
systemctl start rpmad.service || fail "systemctl start rc=$?"
rm -f "$dir/data.out"
out=$(rpmactl get data 1048576 "$dir/data.out" 2>&1 && cmp "$dir/data.in" "$dir/data.out" 2>&1) ||
    fail "$out"
ok "the region's bytes are intact over verbs"

echo "RESULT: PASS"
finish 0
