#!/usr/bin/env bash
# Boots a qemu (TCG) guest whose PID 1 is the real systemd and runs
# guest_checks.sh in it: the rpmad package installed with dpkg, then
# `systemctl start/reload/stop rpmad`, the watchdog, the hardening, an
# upgrade with rpmad running, and a purge. Reads the verdict from the serial
# console: every check prints "CHECK <name>: ...", the last line is
# "RESULT: PASS" or "RESULT: FAIL <why>".
#
#   run_systemd_vm.sh [--rxe] GUEST_CHECKS DEB...
#
# DEB...: the packages of //packaging:debs; the guest installs rpmad's and
# rpmactl's. --rxe: the initramfs also loads the Soft-RoCE modules (rdma_rxe,
# its RDMA core and dummy), before systemd starts, for a GUEST_CHECKS that
# runs rpmad on the verbs provider (guest_checks_verbs.sh).
# SYSTEMD_VM_KEEP=DIR keeps the console log there.
#
# The guest's root is the host's / shared read-only over virtio-9p under an
# overlayfs whose upper layer lives in the initramfs (recipe and pitfalls:
# ../shared/reference/systemd-vm/README.txt). The host needs the packages
# tools/install-deps.sh installs: qemu-system-x86, linux-image-amd64 (its
# /lib/modules too), busybox-static, cpio. A missing one fails the test.
#
# Environment: VM_KERNEL_VERSION, VM_QEMU, VM_ACCEL (as tests/vm/run_vm.sh),
# SYSTEMD_VM_TIMEOUT (seconds, default 400).
# Exit status: 0 only on "RESULT: PASS"; 1 on a failed check or timeout;
# 2 on a missing prerequisite.
set -euo pipefail

rxe=0
[ "${1:-}" != --rxe ] || { rxe=1 && shift; }
[ $# -ge 3 ] || { echo "usage: $0 [--rxe] GUEST_CHECKS DEB..." >&2; exit 2; }
checks=$(realpath "$1")
shift
deb="" ctl_deb=""
for d in "$@"; do
    case $(dpkg-deb -f "$d" Package) in
    rpmad) deb=$(realpath "$d") ;;
    rpmactl) ctl_deb=$(realpath "$d") ;;
    esac
done
[ -n "$deb" ] || { echo "no rpmad package among: $*" >&2; exit 2; }
[ -n "$ctl_deb" ] || { echo "no rpmactl package among: $*" >&2; exit 2; }
keep=${SYSTEMD_VM_KEEP:-}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
vm_lib=$here/../vm/vm_lib.sh
if [ -n "${TEST_SRCDIR:-}" ]; then
    vm_lib=$TEST_SRCDIR/${TEST_WORKSPACE:-rpma}/tests/vm/vm_lib.sh
fi
# shellcheck source=../vm/vm_lib.sh
source "$vm_lib" # vm_die, vm_kernel_version, vm_extract_vmlinux

qemu=${VM_QEMU:-qemu-system-x86_64}
command -v "$qemu" >/dev/null || vm_die "$qemu not found: $VM_INSTALL_HINT (package qemu-system-x86)"
for c in cpio modinfo dpkg-deb; do
    command -v $c >/dev/null || vm_die "$c not found: $VM_INSTALL_HINT"
done
busybox=$(command -v busybox) || vm_die "busybox not found: $VM_INSTALL_HINT (package busybox-static)"
! ldd "$busybox" >/dev/null 2>&1 ||
    vm_die "$busybox is dynamically linked: $VM_INSTALL_HINT (package busybox-static)"
kver=$(vm_kernel_version)

work=$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/systemd-vm.XXXXXX")
cleanup() {
    if [ -n "$keep" ]; then
        mkdir -p "$keep" && cp "$work/console.log" "$keep/" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# The kernel is extracted on the other core while the initramfs is built.
kernel=/boot/vmlinuz-$kver
vm_extract_vmlinux "$kernel" "$work/vmlinux" &
extract_pid=$!

# --- the packages: this build, and the same with a higher version ------------
# The upgrade installs a second build over the first; rebuilding the tree for
# it would cost minutes, and only the version differs between the two.
version=$(dpkg-deb -f "$deb" Version)
upgrade_version=$version+vmupgrade1
dpkg-deb -R "$deb" "$work/upgrade"
sed -i "s/^Version: .*/Version: $upgrade_version/" "$work/upgrade/DEBIAN/control"
dpkg-deb --root-owner-group -b "$work/upgrade" "$work/rpmad_upgrade.deb" >/dev/null

# --- initramfs ------------------------------------------------------------------
ir=$work/initramfs
pl=$ir/payload # the overlay's upper layer: guest / = host / + this
mkdir -p "$ir"/{bin,mods,proc,sys,dev,lower,work,newroot,units} \
    "$pl/etc/systemd/system/rpmad.service.d" "$pl/usr/local/sbin" "$pl/root/vmtest"
cp "$busybox" "$ir/bin/busybox"
for a in sh mount insmod cat rm chroot poweroff dd; do ln -s busybox "$ir/bin/$a"; done
# insmod resolves no dependencies: this order matters.
mods="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
      netfs fscache 9pnet 9pnet_virtio 9p overlay autofs4"
# Soft-RoCE, in the order tests/vm/build_initrd.sh resolves it (modprobe
# --show-depends): the guest's udev and modprobe@ are masked, so nothing
# would load them on demand. dummy creates dummy0 for rxe0 to sit on.
if [ $rxe = 1 ]; then
    mods="$mods configfs ib_core ib_uverbs iw_cm ib_cm rdma_cm rdma_ucm
          udp_tunnel ip6_udp_tunnel crc32_generic rdma_rxe dummy"
fi
for m in $mods; do
    f=$(modinfo -k "$kver" -n "$m") || vm_die "kernel module $m not found for $kver"
    case $f in
    *.ko) cp "$f" "$ir/mods/$m.ko" ;;
    *.ko.xz) xz -dc "$f" >"$ir/mods/$m.ko" ;;
    *.ko.zst) zstd -dcq "$f" >"$ir/mods/$m.ko" ;;
    *) vm_die "unexpected module file $f" ;;
    esac
done
echo $mods >"$ir/mods/order"
cp "$here/guest_init.sh" "$ir/init"
chmod 755 "$ir/init"

cp "$deb" "$pl/root/vmtest/rpmad_$version.deb"
cp "$work/rpmad_upgrade.deb" "$pl/root/vmtest/rpmad_$upgrade_version.deb"
cp "$ctl_deb" "$pl/root/vmtest/rpmactl_$version.deb"
install -m 0755 "$checks" "$pl/usr/local/sbin/guest-checks"
cp "$here/guest_lib.sh" "$pl/root/vmtest/guest_lib.sh"
cat >"$pl/root/vmtest/env" <<EOF
VERSION=$version
UPGRADE_VERSION=$upgrade_version
EOF

cat >"$pl/etc/systemd/system/vmtest.target" <<'EOF'
[Unit]
Description=rpmad systemd VM test
Wants=vmtest-runner.service
AllowIsolate=yes
EOF
cat >"$pl/etc/systemd/system/vmtest-runner.service" <<'EOF'
[Unit]
Description=rpmad systemd VM test runner
After=sysinit.target systemd-journald.service

[Service]
# simple, not oneshot: the boot transaction then finishes at once
Type=simple
ExecStart=/usr/local/sbin/guest-checks
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
EOF
# The test's own changes to rpmad.service, a drop-in as an operator would:
# a short watchdog (the shipped 30 s would make the test slow), an abort
# that does not wait TimeoutStopSec for a stopped process, and the exit
# status recorded (systemd forgets it once the unit is unloaded after stop;
# "+": as root, /run is not writable by rpmad).
cat >"$pl/etc/systemd/system/rpmad.service.d/vmtest.conf" <<'EOF'
[Service]
WatchdogSec=3s
TimeoutAbortSec=3s
ExecStopPost=+/bin/sh -c 'echo "SERVICE_RESULT=$SERVICE_RESULT EXIT_CODE=$EXIT_CODE EXIT_STATUS=$EXIT_STATUS" > /run/rpmad.exit'
EOF

# Units of the host that would hang, fail or waste time in the guest.
mask="postgresql.service systemd-timesyncd.service systemd-pstore.service
      getty@tty1.service serial-getty@ttyS0.service console-getty.service
      e2scrub_reap.service systemd-networkd-wait-online.service
      apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer
      fstrim.timer man-db.timer logrotate.timer systemd-tmpfiles-clean.timer
      systemd-udevd.service systemd-udev-trigger.service
      systemd-udevd-control.socket systemd-udevd-kernel.socket systemd-udev-settle.service
      modprobe@.service kmod-static-nodes.service systemd-modules-load.service
      sys-kernel-debug.mount sys-kernel-tracing.mount sys-kernel-config.mount
      sys-fs-fuse-connections.mount dev-hugepages.mount
      proc-sys-fs-binfmt_misc.automount systemd-binfmt.service
      systemd-sysctl.service systemd-sysusers.service systemd-random-seed.service
      systemd-journal-flush.service systemd-update-utmp.service systemd-remount-fs.service
      systemd-firstboot.service systemd-machine-id-commit.service systemd-repart.service
      systemd-pcrphase.service systemd-pcrphase-sysinit.service
      systemd-ask-password-console.path systemd-ask-password-wall.path
      systemd-tmpfiles-setup-dev.service"
for u in $mask; do ln -sf /dev/null "$pl/etc/systemd/system/$u"; done
mkdir -p "$pl/etc/systemd/system-generators"
for g in /lib/systemd/system-generators/*; do
    ln -sf /dev/null "$pl/etc/systemd/system-generators/${g##*/}"
done
# PID 1 looks up units (mostly in vain) many times: serve the unit
# directories from the initramfs rather than over 9p.
cp -a /etc/systemd "$ir/units/etc-systemd"
cp -a /usr/lib/systemd/system "$ir/units/usr-lib-systemd-system"
cp -a "$pl/etc/systemd/." "$ir/units/etc-systemd/"
(cd "$ir" && find . -mindepth 1 | cpio -o -H newc --quiet) >"$work/initramfs.cpio"

boot=$kernel
if wait "$extract_pid"; then boot=$work/vmlinux; fi
bios=()
if [ "$boot" != "$kernel" ]; then # qboot starts faster than SeaBIOS (PVH boot)
    for f in /usr/share/qemu/qboot.rom /usr/share/qemu/bios-microvm.bin; do
        [ -r "$f" ] && bios=(-bios "$f") && break
    done
fi

# --- boot ------------------------------------------------------------------------
timeout=${SYSTEMD_VM_TIMEOUT:-400}
log=$work/console.log
echo "systemd-vm: kernel $kver ($([ "$boot" = "$kernel" ] && echo bzImage || echo vmlinux, PVH)), rpmad $version -> $upgrade_version"
start=$(date +%s)
set +e
timeout -k 5 "$timeout" "$qemu" -accel "${VM_ACCEL:-tcg}" -machine pc -cpu qemu64 -m 1G -smp 1 \
    -nodefaults -no-user-config -display none -no-reboot ${bios[@]+"${bios[@]}"} \
    -kernel "$boot" -initrd "$work/initramfs.cpio" \
    -append "console=ttyS0 rdinit=/init panic=-1 cryptomgr.notests quiet loglevel=3 systemd.show_status=error systemd.unit=vmtest.target" \
    -fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
    -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
    -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
    -serial "file:$log" </dev/null >"$work/qemu.log" 2>&1
rc=$?
set -e
timed_out=0
[ $rc != 124 ] && [ $rc != 137 ] || timed_out=1
tr -d '\r' <"$log" >"$log.txt" && mv "$log.txt" "$log"
cat "$log"
echo "systemd-vm: qemu ran $(($(date +%s) - start)) s"
[ -s "$work/qemu.log" ] && echo "systemd-vm: qemu said: $(cat "$work/qemu.log")"

result=$(grep -a '^RESULT: ' "$log" | tail -n 1 || true)
if [ $timed_out = 1 ]; then
    echo "systemd-vm: FAIL: no result within ${timeout}s${result:+ (last: $result)}"
    exit 1
fi
case $result in
"RESULT: PASS") echo "systemd-vm: PASS" ;;
"RESULT: FAIL"*) echo "systemd-vm: FAIL: ${result#RESULT: FAIL }" && exit 1 ;;
*) echo "systemd-vm: FAIL: the guest printed no RESULT line" && exit 1 ;;
esac
