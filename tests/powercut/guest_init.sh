#!/bin/busybox sh
# The power-cut VM's /init (see README.md). The host's root is shared
# read-only over virtio-9p, so rpmad runs from its host path with the host's
# libraries; the pool directory is on /dev/vda, an ext4 file system on the
# host file the harness keeps across power cuts. rpmad runs in the
# foreground with its log on the console until the harness cuts the power
# (SIGKILL of qemu) or, after the last check, lets the VM go.
#
# /powercut.conf (written by run_powercut.sh) names rpmad (RPMAD=...). The
# kernel command line carries the boot's choices: powercut.persistence=
# apm|gpspm (rpmad's data.persistence).
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
say() { echo "POWERCUT $*" >/dev/ttyS0; }
# Seconds since the kernel started, for the boot's timeline on the console.
at() { stages="$stages $1=$(cut -d" " -f1 /proc/uptime)"; }
fail() {
    say "GUEST-FAIL $*"
    poweroff -f
}
. /powercut.conf
persistence=$(sed -n 's/.*powercut\.persistence=\([a-z]*\).*/\1/p' /proc/cmdline)
[ -n "$persistence" ] || fail "no powercut.persistence= on the kernel command line"

# A module for hardware the VM lacks (crc32c-intel: no SSE4.2 on qemu64)
# refuses to load; a missing one that matters shows in the mounts below.
at init
for m in $(cat /mods/order); do insmod "/mods/$m.ko" 2>/dev/null || say "insmod $m failed"; done
at modules
h=/host
mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=262144,cache=loose hostroot $h ||
    fail "mount the host's root over 9p"
# /run for the guest's own files; the host's /tmp stays visible (read-only),
# for an rpmad run by hand from there.
mount -t tmpfs tmpfs $h/run || fail "mount tmpfs on /run"
mount -t proc proc $h/proc && mount -t sysfs sysfs $h/sys && mount -t devtmpfs devtmpfs $h/dev ||
    fail "mount /proc, /sys, /dev in the host's root"

# qemu's user network: the guest is 10.0.2.15; the harness forwards two
# ports on the host's 127.0.0.1 to it (restrict=on: nothing else gets out).
ip link set lo up && ip addr add 10.0.2.15/24 dev eth0 && ip link set eth0 up ||
    fail "configure eth0"

at net
[ -b /dev/vda ] || fail "no /dev/vda (the pool disk)"
# ext4 replays its journal here after a cut; rpmad then recovers its catalog.
mount -t ext4 /dev/vda $h/mnt || fail "mount /dev/vda (ext4) on /mnt"
mkdir -p $h/mnt/pool || fail "mkdir /mnt/pool"
at disk
cat >$h/run/rpmad.yaml <<EOF
control:
  listen: "10.0.2.15:7300"
data:
  listen: "10.0.2.15:7301"
  provider: tcp
  persistence: $persistence
storage:
  pool_dir: /mnt/pool
logging:
  level: info
  target: stderr
EOF
say "rpmad starting: persistence=$persistence pool=/mnt/pool on /dev/vda (ext4); uptime at$stages"
chroot $h "$RPMAD" --config /run/rpmad.yaml </dev/null >/dev/ttyS0 2>&1
say "GUEST-FAIL rpmad exited with status $? before the power cut"
poweroff -f
