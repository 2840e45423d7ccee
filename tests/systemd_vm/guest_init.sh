#!/bin/busybox sh
# The systemd VM's /init: mounts the host's root read-only over 9p under an
# overlay whose upper layer is /payload of this initramfs, and hands over to
# the host's systemd as PID 1 (see run_systemd_vm.sh).
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() {
    echo "RESULT: FAIL initramfs: $*" >/dev/ttyS0
    printf '\001' | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
    poweroff -f
}
for m in $(cat /mods/order); do insmod /mods/$m.ko || fail "insmod $m"; done
mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=262144,cache=loose hostroot /lower ||
    fail "mount 9p"
mount -t overlay overlay -o lowerdir=/lower,upperdir=/payload,workdir=/work /newroot ||
    fail "mount overlay"
# /.dockerenv makes systemd believe it runs in a container (and ignore the
# kernel command line); Docker's policy-rc.d (exit 101) would keep the
# package's maintainer scripts from starting rpmad, as on no real host.
rm -f /newroot/.dockerenv /newroot/run/.containerenv /newroot/usr/sbin/policy-rc.d
# A host that ran rpmad as root has a root-owned pool in /var/lib/rpmad; the
# guest is a host that never ran it.
rm -rf /newroot/var/lib/rpmad /newroot/etc/rpmad
# systemd-tmpfiles would walk the host's /tmp over 9p.
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /newroot/tmp || fail "mount /tmp"
mount --bind /units/etc-systemd /newroot/etc/systemd &&
    mount --bind /units/usr-lib-systemd-system /newroot/usr/lib/systemd/system ||
    fail "bind the unit directories"
for d in dev proc sys; do mount --move /$d /newroot/$d || fail "move /$d"; done
# Like switch_root, but keeps the initramfs: it holds the overlay's upper layer.
cd /newroot && mount --move . / && exec chroot . /lib/systemd/systemd
fail "exec systemd"
