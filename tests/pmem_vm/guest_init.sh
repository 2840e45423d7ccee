#!/bin/busybox sh
# The emulated-PMem VM's /init (see README.md). The kernel's memmap=
# parameters turn ranges of the guest's RAM into legacy persistent memory
# (nd_e820), which nd_pmem serves as /dev/pmem0 with struct pages, so ext4
# can be mounted -o dax on it. Three rpmads on the tcp provider run side by
# side: "dax" with its pool directory on that file system (its region files
# are mapped with MAP_SYNC), "page" with its pool directory on ext4 on
# /dev/vda (a virtio disk: the page cache), "pmempage" on ext4 without dax
# on /dev/pmem1 (a second memmap= range: the page cache over the same
# medium as DAX). Each one's log goes to the console with its name in front
# of every line.
#
# /pmemvm.conf (written by run_pmem_vm.sh) names rpmad (RPMAD=...). The
# kernel command line says pmemvm.mode=fsdax (the above) or devdax: the
# namespace becomes /dev/dax0.0 (ndctl create-namespace -m devdax) and the
# dax rpmad serves a region on it from storage.devdax_regions, next to one
# on a regular file that it must refuse.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
say() { echo "PMEMVM $*" >/dev/ttyS0; }
fail() {
    say "GUEST-FAIL $*"
    poweroff -f
}
. /pmemvm.conf
mode=$(sed -n 's/.*pmemvm\.mode=\([a-z]*\).*/\1/p' /proc/cmdline)
[ "$mode" = fsdax ] || [ "$mode" = devdax ] || fail "pmemvm.mode=fsdax|devdax missing on the kernel command line"

# A module for hardware the VM lacks (crc32c-intel: no SSE4.2 on qemu64)
# refuses to load; a missing one that matters shows below.
for m in $(cat /mods/order); do insmod "/mods/$m.ko" 2>/dev/null || say "insmod $m failed"; done
h=/host
mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=262144,cache=loose hostroot $h ||
    fail "mount the host's root over 9p"
mount -t tmpfs tmpfs $h/run || fail "mount tmpfs on /run"
mount -t proc proc $h/proc && mount -t sysfs sysfs $h/sys && mount -t devtmpfs devtmpfs $h/dev ||
    fail "mount /proc, /sys, /dev in the host's root"
ip link set lo up && ip addr add 10.0.2.15/24 dev eth0 && ip link set eth0 up ||
    fail "configure eth0"

# libnvdimm probes its devices asynchronously: wait (bounded) for the nodes.
# Two memmap= ranges: pmem0 for DAX, pmem1 for the page cache over PMem.
i=0
while { [ ! -b /dev/pmem0 ] || [ ! -b /dev/pmem1 ]; } && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
done
for p in pmem0 pmem1; do
    [ -b /dev/$p ] || fail "no /dev/$p: are both memmap= on the kernel command line and nd_e820 loaded?"
    say "$p: $(cat /sys/block/$p/size) sectors, $(basename "$(readlink /sys/block/$p/device)")"
done
# The namespace of pmem0 (ndctl reconfigures it for devdax).
ns=$(basename "$(readlink /sys/block/pmem0/device)")

# Two mount points under a tmpfs on /mnt (the host's own /mnt is read-only).
mount -t tmpfs tmpfs $h/mnt && mkdir $h/mnt/dax $h/mnt/page $h/mnt/pmempage || fail "mount tmpfs on /mnt"
[ -b /dev/vda ] || fail "no /dev/vda (the page-cache disk)"
mount -t ext4 /dev/vda $h/mnt/page || fail "mount /dev/vda (ext4) on /mnt/page"
devdax=""
if [ "$mode" = devdax ]; then
    # The legacy namespace reconfigured as device DAX (an info block at its
    # start, then /dev/dax0.0), with the host's ndctl over 9p.
    chroot $h ndctl create-namespace -f -e "$ns" -m devdax >/dev/ttyS0 2>&1 ||
        fail "ndctl create-namespace -m devdax on $ns"
    [ -c /dev/dax0.0 ] || fail "no /dev/dax0.0 after ndctl create-namespace -m devdax"
    say "dax0.0: $(cat /sys/bus/dax/devices/dax0.0/size) bytes, align $(cat /sys/bus/dax/devices/dax0.0/align 2>/dev/null)"
    # A devdax_regions entry on a regular file: rpmad must refuse it.
    chroot $h truncate -s 16M /mnt/page/not-dax.img || fail "truncate /mnt/page/not-dax.img"
    devdax='
  devdax_regions:
    - {name: "devdax", path: "/dev/dax0.0", size: "16MiB"}
    - {name: "notdax", path: "/mnt/page/not-dax.img", size: "16MiB"}'
else
    chroot $h /sbin/mkfs.ext4 -q -F -b 4096 /dev/pmem0 >/dev/ttyS0 2>&1 || fail "mkfs.ext4 /dev/pmem0"
    mount -t ext4 -o dax /dev/pmem0 $h/mnt/dax || fail "mount -o dax /dev/pmem0: no DAX support?"
    grep -q "^/dev/pmem0 .*dax" /proc/mounts ||
        fail "/dev/pmem0 is mounted without dax: $(grep pmem0 /proc/mounts)"
fi
chroot $h /sbin/mkfs.ext4 -q -F -b 4096 /dev/pmem1 >/dev/ttyS0 2>&1 || fail "mkfs.ext4 /dev/pmem1"
mount -t ext4 /dev/pmem1 $h/mnt/pmempage || fail "mount /dev/pmem1 (ext4, no dax) on /mnt/pmempage"
say "mounts: $(grep -E '^/dev/(pmem[01]|vda) ' /proc/mounts | tr '\n' ';')"

# The unit tests whose DAX cases need this medium, before any rpmad maps
# it: the region store's (region_store_dax_check: RPMA_TEST_DAX_DIR on
# fsdax, RPMA_TEST_DEVDAX on device DAX) and the tcp provider's persist
# choice (tcp_persist_test: MAP_SYNC on fsdax, device DAX flushed from the
# CPU caches). Their scratch files go to the page-cache disk.
unit_check() {
    local env filter out t only
    mkdir -p $h/mnt/page/unit-tmp || fail "UNIT mkdir /mnt/page/unit-tmp"
    if [ "$mode" = devdax ]; then
        env=RPMA_TEST_DEVDAX=/dev/dax0.0 filter='DeviceDax.*'
    else
        mkdir -p $h/mnt/dax/unit || fail "UNIT mkdir /mnt/dax/unit"
        env=RPMA_TEST_DAX_DIR=/mnt/dax/unit filter='Fsdax.*'
    fi
    for t in "$UNIT_STORE" "$UNIT_PERSIST"; do
        only="--gtest_filter=*"
        [ "$t" != "$UNIT_STORE" ] || only="--gtest_filter=$filter"
        if ! out=$(chroot $h env TEST_TMPDIR=/mnt/page/unit-tmp "$env" "$t" "$only" 2>&1); then
            echo "$out" | tail -n 40 >/dev/ttyS0
            fail "UNIT $(basename "$t") failed on $mode"
        fi
        say "UNIT PASS $(basename "$t") on $mode ($env): $(echo "$out" | grep -E '^\[  PASSED  \]')"
    done
}
unit_check

# rpmad NAME PORT POOL [STORAGE]: control on PORT, data on PORT+1 (on
# $data_ip, provider $provider, persistence $persistence), more storage:
# lines, debug logging (its own and rpma_core's, which names each
# registration's persist method).
data_ip=10.0.2.15 provider=tcp persistence=apm
rpmad() {
    mkdir -p "$h/$3" || fail "mkdir $3"
    cat >"$h/run/rpmad-$1.yaml" <<EOF
control:
  listen: "10.0.2.15:$2"
data:
  listen: "$data_ip:$(($2 + 1))"
  provider: $provider
  persistence: $persistence
storage:
  pool_dir: $3$4
logging:
  level: debug
  target: stderr
EOF
    (
        chroot $h "$RPMAD" --config "/run/rpmad-$1.yaml" </dev/null 2>&1
        echo "GUEST-FAIL rpmad $1 exited with status $?"
    ) | while IFS= read -r line; do echo "$1| $line"; done >/dev/ttyS0 &
}

# verbs_rpmad PERSISTENCE NAME PORT POOL REGION OFFSET: an rpmad on verbs
# (data on 10.0.9.1) serving 16 MiB of /dev/dax0.0 at OFFSET as REGION;
# returns once it answers.
verbs_rpmad() {
    local i
    data_ip=10.0.9.1 provider=verbs persistence=$1
    rpmad "$2" "$3" "$4" "
  devdax_regions:
    - {name: \"$5\", path: \"/dev/dax0.0\", offset: \"$6\", size: \"16MiB\"}"
    data_ip=10.0.2.15 provider=tcp persistence=apm
    i=0
    until chroot $h env RPMA_PROVIDER=verbs $RPMACTL --server "10.0.2.15:$3" health >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -lt 120 ] || fail "VERBS rpmad $2 on verbs ($1) did not answer in 60 s"
        sleep 0.5
    done
}

# The verbs provider (pmemvm.verbs=1): Soft-RoCE (rxe0 over dummy0, as in
# tests/systemd_vm), an rpmad on verbs with GPSPM (the region store's
# persist, cpu-flush on DAX) serving a second range of /dev/dax0.0, and
# rpmactl in the guest (the host reaches only TCP) putting 1 MiB and getting
# it back. Device DAX, not fsdax: the kernel refuses the long-term pin
# ibv_reg_mr needs on fsdax pages (EOPNOTSUPP) unless the device has
# on-demand paging, which rxe lacks. Before the tcp daemons start, so that
# it does not weigh on their latencies; it stays up, idle.
verbs_check() {
    local i state out rpmactl="chroot $h env RPMA_PROVIDER=verbs $RPMACTL --server 10.0.2.15:7330"
    ip addr add 10.0.9.1/24 dev dummy0 && ip link set dummy0 up || fail "VERBS configure dummy0"
    out=$(chroot $h rdma link add rxe0 type rxe netdev dummy0 2>&1) || fail "VERBS rdma link add rxe0: $out"
    i=0
    while ! grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null && [ $i -lt 100 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state || fail "VERBS rxe0 port 1 not ACTIVE"
    [ "$mode" = devdax ] || fail "VERBS runs with devdax only"
    verbs_rpmad gpspm daxverbs 7330 /mnt/dax/verbspool verbsdata 32MiB
    head -c 1048576 /dev/urandom >$h/run/verbs.in || fail "VERBS make the input"
    out=$($rpmactl put /run/verbs.in verbsdata 2>&1) || fail "VERBS put: $out"
    out=$($rpmactl get verbsdata 1048576 /run/verbs.out 2>&1) || fail "VERBS get: $out"
    cmp $h/run/verbs.in $h/run/verbs.out || fail "VERBS got other bytes back"
    out=$($rpmactl region info verbsdata 2>&1) || fail "VERBS region info: $out"
    echo "$out" | grep -q cpu-flush || fail "VERBS the region does not persist by cpu-flush: $out"
    apm_check
    say "VERBS PASS: 1 MiB put and got back identical over rxe0 (rpmad on verbs, gpspm," \
        "region on /dev/dax0.0, persist method cpu-flush); apm refused on cache-line DAX"
}

# data.persistence apm over verbs on a cache-line region (DAX without eADR,
# as here): with DDIO an RDMA flush leaves the RNIC's writes in the CPU
# cache, so rpmad must not serve the region (the host finds the reason,
# naming the key, in this rpmad's log on the console).
apm_check() {
    local out apmctl="chroot $h env RPMA_PROVIDER=verbs $RPMACTL --server 10.0.2.15:7340"
    verbs_rpmad apm daxapm 7340 /mnt/dax/apmpool apmdata 64MiB
    out=$($apmctl region info apmdata 2>&1) || fail "VERBS region info apmdata: $out"
    echo "$out" | grep -q cache-line || fail "VERBS apmdata is not of cache-line granularity: $out"
    if out=$($apmctl put /run/verbs.in apmdata 2>&1); then
        fail "VERBS apm over verbs was served on a cache-line region: $out"
    fi
    echo "$out" | grep -q "not served on the data plane" ||
        fail "VERBS put to apmdata failed otherwise than refused: $out"
}
! grep -q "pmemvm.verbs=1" /proc/cmdline || verbs_check

rpmad dax 7300 /mnt/dax/pool "$devdax"
rpmad page 7310 /mnt/page/pool
rpmad pmempage 7320 /mnt/pmempage/pool
say "rpmads starting: dax on 7300/7301 (/mnt/dax/pool), page on 7310/7311 (/mnt/page/pool)," \
    "pmempage on 7320/7321 (/mnt/pmempage/pool)"
wait
poweroff -f
