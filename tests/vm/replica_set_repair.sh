#!/bin/sh
# A replica set on verbs losing a member and getting it back, with rpmactl in
# VM 2 against three rpmads in VM 1 (rpmad_vm_driver serve-set):
#   put A on all three; the third rpmad SIGKILLed; put B over part of A with
#   --quorum 2 (exit 1: durable on 2 of 3, the third recorded stale); the
#   third restarted on its pool; region list says it is stale, get --replica
#   of it is refused; region repair copies it back; verify finds every
#   replica identical; each replica reads back exactly A with B over it.
#
#   replica_set_repair.sh RPMACTL DRIVER SERVER_IP
set -eu
rpmactl=$1 driver=$2 ip=$3
first=$ip:7300
work=$(mktemp -d)
export HOME=$work XDG_CONFIG_HOME=$work RPMACTL_SERVER=
ctl() { "$rpmactl" --server "$ip:7300" --server "$ip:7400" --server "$ip:7500" "$@"; }
fail() {
    echo "replica_set_repair: FAIL: $*" >&2
    exit 1
}

size=$((4 << 20))
head -c $size /dev/urandom >"$work/a"
head -c $((1 << 20)) /dev/urandom >"$work/b"
cp "$work/a" "$work/expected"
dd if="$work/b" of="$work/expected" bs=1M seek=2 conv=notrunc 2>/dev/null

ctl put "$work/a" data --size $size || fail "put A on three replicas"

"$driver" signal "$first" kill-last || fail "signalling kill-last"
"$driver" await "$first" killed || fail "the third rpmad was not killed"
set +e
ctl put "$work/b" data:$((2 << 20)) --quorum 2
code=$?
set -e
[ $code -eq 1 ] || fail "put B with one replica down exited $code, not 1 (durable on 2 of 3)"

"$driver" signal "$first" restart-last || fail "signalling restart-last"
"$driver" await "$first" restarted || fail "the third rpmad did not come back"

ctl region list | tee "$work/list"
grep "$ip:7500" "$work/list" | grep -q "stale (missed writes since generation" ||
    fail "region list does not show the third replica stale"
if ctl get data $size "$work/out" --replica 2 2>"$work/err"; then
    fail "get --replica of the stale replica succeeded"
fi
grep -q "rpmactl region repair data" "$work/err" || fail "the refusal says no remedy: $(cat "$work/err")"

ctl region repair data || fail "region repair"
ctl verify data || fail "verify after the repair"
for replica in 0 1 2; do
    ctl get data $size "$work/out" --replica $replica || fail "get --replica $replica"
    cmp "$work/out" "$work/expected" || fail "replica $replica differs from what was acknowledged"
done
ctl region list | grep "$ip:7500" | grep -q "in-sync" || fail "the repaired replica is not in sync"
rm -rf "$work"
"$driver" signal "$first" || fail "signalling the end"
echo "replica_set_repair: OK"
