#!/bin/sh
# /init of the VM tier (busybox sh, PID 1). Brings up Soft-RoCE (rxe0), runs
# the tests of /tests.list that belong to this VM, prints one result line per
# test and powers off.
#
# Kernel command line (the kernel passes unknown a=b words as environment):
#   vmnode=N    this VM's node number (default 1)
#   vmnodes=M   1: rxe0 over dummy0; 2: rxe0 over eth0 (virtio-net), two VMs
#
# /tests.list, one test per line, fields separated by one TAB:
#   <name> <node> <timeout seconds> <shell command>
# <node> is 1, 2 or * (every VM). The command runs with `sh -c` in /t (the
# test files, by runfiles path) with this environment:
#   VM_NODE VM_NODES      this node's number, the node count
#   VM_IP VM_SERVER_IP VM_CLIENT_IP   10.0.1.<node>, 10.0.1.1, 10.0.1.2
#   VM_NETDEV VM_RDMA_DEV the netdev under rxe0, rxe0
#   VMTEST_PORT           20000 + the line number of the first line with the
#                         test's name: the server and the client part of a
#                         two-VM test agree on it, and no other test uses it
#   LD_LIBRARY_PATH=/vmlib  libraries that are not under /lib or /usr
#
# Console protocol (parsed by run_vm.sh; nothing else starts with VMTEST):
#   VMTEST-START <name>
#   [<name>] <each line the test prints>
#   VMTEST <name> PASS|FAIL rc=<n> <seconds>s [timeout]
#   VMTEST-DONE <number of tests run>
#   VMTEST-SETUP-FAILED <reason>   (instead of running tests)
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
dmesg -n 1 # kernel messages stay in dmesg, off the console lines we print

node=${vmnode:-1}
nodes=${vmnodes:-1}
up() { cut -d' ' -f1 /proc/uptime; }
info() { echo "VMINFO node$node $*"; }
finish() {
    sync
    poweroff -f
    echo o >/proc/sysrq-trigger
    sleep 10
}
setup_failed() {
    echo "VMTEST-SETUP-FAILED node$node $*"
    dmesg | tail -n 30 | sed 's/^/[dmesg] /'
    finish
}
info "init started at ${node}/${nodes}, uptime $(up)s, kernel $(uname -r)"

kdir=/lib/modules/$(uname -r)
mods=$(cat /etc/vm-modules)
[ "$nodes" -gt 1 ] && mods="$(cat /etc/vm-modules-net) $mods"
for m in $mods; do
    insmod "$kdir/$m.ko" || setup_failed "insmod $m"
done

ip link set lo up
if [ "$nodes" -gt 1 ]; then
    netdev=eth0
else
    netdev=dummy0 # dummy.ko creates dummy0 itself (numdummies=1)
    ip link show dummy0 >/dev/null 2>&1 || ip link add dummy0 type dummy
fi
ip=10.0.1.$node
ip addr add "$ip/24" dev "$netdev" || setup_failed "no $netdev"
ip link set "$netdev" up || setup_failed "$netdev does not come up"
rdma link add rxe0 type rxe netdev "$netdev" || setup_failed "rdma link add rxe0 netdev $netdev"
i=0
until grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null; do
    i=$((i + 1))
    [ $i -le 100 ] || setup_failed "rxe0 port 1 not ACTIVE after 10 s"
    sleep 0.1
done
info "rxe0 ACTIVE over $netdev $ip, uptime $(up)s"

export VM_NODE="$node" VM_NODES="$nodes" VM_IP="$ip" VM_SERVER_IP=10.0.1.1 VM_CLIENT_IP=10.0.1.2
export VM_NETDEV=$netdev VM_RDMA_DEV=rxe0 LD_LIBRARY_PATH=/vmlib HOME=/tmp

# Kills the processes of process group $1 (a test's background jobs, or its
# children when the timeout killed only the shell) and says which.
reap_group() {
    g=$1
    for d in /proc/[0-9]*; do
        read -r st <"$d/stat" 2>/dev/null || continue
        # shellcheck disable=SC2086 # split "state ppid pgrp ..." after "(comm) "
        set -- ${st##*) }
        [ "$3" = "$g" ] || continue
        c=$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null)
        echo "(killing leftover process ${d#/proc/}: $c)"
    done
    kill -9 "-$g" 2>/dev/null
}

tab=$(printf '\t')
count=0
# shellcheck disable=SC2094 # the loop and grep both only read /tests.list
while IFS="$tab" read -r name tnode tmo cmd; do
    case "$name" in '' | '#'*) continue ;; esac
    [ "$tnode" = "*" ] || [ "$tnode" = "$node" ] || continue
    count=$((count + 1))
    first=$(grep -n "^$name$tab" /tests.list | head -n 1 | cut -d: -f1)
    export VMTEST_PORT=$((20000 + first))
    echo "VMTEST-START $name"
    t0=$(up)
    rm -f /tmp/rc
    {
        # its own process group, so that everything it started can be killed
        # once it is over: a background job would hold the pipe to sed open
        (cd /t && exec setsid timeout -s KILL "$tmo" sh -c "$cmd") </dev/null &
        pid=$!
        wait $pid
        echo $? >/tmp/rc
        reap_group $pid
    } 2>&1 | sed "s/^/[$name] /"
    t1=$(up)
    rc=$(cat /tmp/rc 2>/dev/null || echo 255)
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    note=""
    if [ "$rc" = 137 ] && awk -v s="$secs" -v t="$tmo" 'BEGIN { exit !(s >= t) }'; then
        note=" timeout"
    fi
    if [ "$rc" = 0 ]; then
        echo "VMTEST $name PASS rc=0 ${secs}s"
    else
        # the kernel's messages since the test started
        dmesg | awk -v t0="$t0" -v p="[$name] [dmesg] " '
            { s = $0; sub(/^\[ */, "", s); if (s + 0 >= t0) print p $0 }' | tail -n 30
        echo "VMTEST $name FAIL rc=$rc ${secs}s$note"
    fi
done </tests.list

s=/sys/class/net/$netdev/statistics
info "net $netdev rx_packets=$(cat $s/rx_packets) tx_packets=$(cat $s/tx_packets)" \
    "rx_bytes=$(cat $s/rx_bytes) tx_bytes=$(cat $s/tx_bytes)"
info "done, uptime $(up)s"
echo "VMTEST-DONE $count"
finish
