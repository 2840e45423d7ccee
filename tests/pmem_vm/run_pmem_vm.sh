#!/usr/bin/env bash
# Emulated persistent memory: one qemu (TCG) boot whose kernel turns two
# ranges of the guest's RAM into legacy PMem (memmap=: /dev/pmem0 and
# /dev/pmem1), with ext4 mounted -o dax on pmem0, ext4 without dax on pmem1
# and on a virtio disk (the page cache). Three rpmads (tcp provider, APM)
# serve a pool directory on each; the client on the host checks the persist
# method each region reports, puts and gets 1 MiB on each, measures the
# 4 KiB write + persistent flush latency on all three (DAX must be the
# fastest), and the console must show rpma_core's registration line naming
# cpu-flush for the DAX daemon and msync for the others. Before the rpmads,
# the guest runs the region store's and the tcp provider's persist unit
# tests with their DAX cases on the medium. See README.md.
#
#   run_pmem_vm.sh [--devdax | --verbs RPMACTL] CLIENT RPMAD VM_LIB
#
# --devdax: the namespace is reconfigured as device DAX (ndctl
#   create-namespace -m devdax: /dev/dax0.0) instead of fsdax; the DAX rpmad
#   serves a storage.devdax_regions region on it, and must refuse another
#   entry whose path is a regular file.
# --verbs RPMACTL: --devdax, and before the tcp daemons the guest sets up
#   Soft-RoCE (rxe0 over dummy0) and runs an rpmad on verbs (GPSPM, a
#   devdax region on a second range of /dev/dax0.0) and RPMACTL against it
#   in the guest: 1 MiB put and got back identical, the region's persist
#   method cpu-flush. (Not fsdax: ibv_reg_mr cannot pin fsdax pages.)
# CLIENT: pmem_vm_client; RPMAD: the daemon; VM_LIB: tests/vm/vm_lib.sh.
# Environment: PMEMVM_ITERATIONS (default 200) recorded write+persists on
# each; PMEMVM_KEEP=<dir> keeps the console; VM_KERNEL_VERSION, VM_QEMU,
# VM_ACCEL as in tests/vm/run_vm.sh.
# Exit status: 0 on success, 1 on a failure, 2 on a missing prerequisite.
set -euo pipefail

usage="usage: $0 [--devdax | --verbs RPMACTL] CLIENT RPMAD VM_LIB"
mode=fsdax verbs=0 rpmactl=""
case ${1:-} in
--devdax) mode=devdax && shift ;;
--verbs) mode=devdax verbs=1 && rpmactl=$(realpath "${2:?$usage}") && shift 2 ;;
esac
[ $# = 3 ] || { echo "$usage" >&2; exit 2; }
client=$(realpath "$1")
rpmad=$(realpath "$2")
# shellcheck source=../vm/vm_lib.sh
source "$3" # vm_die, vm_kernel_version, vm_copy_modules, vm_boot_image, vm_free_port, ...
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The unit tests the guest runs on the medium (guest_init.sh: unit_check),
# from the test's runfiles.
runfiles=${TEST_SRCDIR:-$here/../..}/${TEST_WORKSPACE:-}
unit_store=$(realpath "$runfiles/tests/unit/daemon/region_store_dax_check")
unit_persist=$(realpath "$runfiles/tests/unit/provider/tcp/tcp_persist_test")
iterations=${PMEMVM_ITERATIONS:-200}

# --- prerequisites: a missing one fails the test (exit 2), never skips it -----
qemu=${VM_QEMU:-qemu-system-x86_64}
command -v "$qemu" >/dev/null || vm_die "$qemu not found: $VM_INSTALL_HINT (package qemu-system-x86)"
for c in cpio modprobe objcopy mkfs.ext4 timeout; do
    command -v $c >/dev/null || vm_die "$c not found: $VM_INSTALL_HINT"
done
[ $verbs = 0 ] || command -v rdma >/dev/null ||
    vm_die "rdma not found (the guest runs the host's): $VM_INSTALL_HINT (package iproute2)"
[ $verbs = 0 ] || ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-*.so >/dev/null 2>&1 ||
    vm_die "no Soft-RoCE provider for libibverbs: $VM_INSTALL_HINT (package ibverbs-providers)"
[ $mode = fsdax ] || command -v ndctl >/dev/null ||
    vm_die "ndctl not found (the guest runs the host's): $VM_INSTALL_HINT (package ndctl)"
busybox=$(vm_static_busybox)
kver=$(vm_kernel_version)
kernel=/boot/vmlinuz-$kver

work=$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/pmemvm.XXXXXX")
qemu_pid=""
failed=1
cleanup() {
    if [ -n "$qemu_pid" ]; then kill -KILL "$qemu_pid" 2>/dev/null && wait "$qemu_pid" 2>/dev/null || true; fi
    local keep=${PMEMVM_KEEP:-}
    [ -n "$keep" ] || { [ $failed = 1 ] && keep=${TEST_UNDECLARED_OUTPUTS_DIR:-}; } || true
    if [ -n "$keep" ]; then mkdir -p "$keep" && cp "$work"/*.log "$keep/" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

vm_extract_vmlinux "$kernel" "$work/vmlinux" &
extract_pid=$!

# --- initramfs: busybox, the kernel modules, /init -----------------------------
ir=$work/initramfs
vm_busybox_initramfs "$ir" "$busybox" sh mount insmod cat sed mkdir chroot ip poweroff sleep grep \
    tr readlink basename head cmp
# virtio (PCI), 9p for the host's root, the disk, ext4, the network, and the
# legacy PMem: nd_e820 makes the memmap= range an NVDIMM region, nd_pmem
# gives /dev/pmem0, dax_pmem and device_dax serve it as /dev/dax0.0 once
# ndctl made it device DAX.
# With --verbs: Soft-RoCE (rdma_rxe over dummy), uverbs and the RDMA CM;
# crc32_generic for rxe's ICRC (the kernel asks for "crc32" by name when
# rxe0 is added, and nothing in the guest would load it on demand).
verbs_modules=()
[ $verbs = 0 ] || verbs_modules=(dummy crc32_generic rdma_rxe ib_uverbs rdma_ucm)
vm_copy_modules "$ir/mods" "$kver" virtio_pci 9pnet_virtio 9p virtio_blk ext4 virtio_net \
    nd_e820 nd_pmem dax_pmem device_dax ${verbs_modules[@]+"${verbs_modules[@]}"}
install -m 0755 "$here/guest_init.sh" "$ir/init"
printf "RPMAD='%s'\nRPMACTL='%s'\nUNIT_STORE='%s'\nUNIT_PERSIST='%s'\n" "$rpmad" "$rpmactl" \
    "$unit_store" "$unit_persist" >"$ir/pmemvm.conf"
vm_pack_initramfs "$ir" "$work/initramfs.cpio"

# The page-cache disk: ext4 in a host file (cache=none as in tests/powercut:
# the guest's FLUSH becomes fdatasync of the host file).
vm_ext4_disk "$work/disk.img" 128M

vm_boot_image "$kernel" "$work/vmlinux" "$extract_pid" # sets VM_BOOT, VM_BIOS

fail_with_console() {
    echo "pmemvm: the last 80 lines of the console:"
    tr -d '\r' <"$work/console.log" 2>/dev/null | tail -n 80 | sed 's/^/    /'
    echo "pmemvm: FAIL: $*"
    exit 1
}

# Boots the VM and waits until both rpmads answer on their forwarded control
# ports. Four ports forwarded: control and data of each daemon. A port taken
# between the choice and qemu's bind is retried with others.
for attempt in 1 2 3 4 5; do
    ports=() fwd=""
    for guest in 7300 7301 7310 7311 7320 7321; do
        p=$(vm_free_port)
        ports+=("$p")
        fwd+=",hostfwd=tcp:127.0.0.1:$p-10.0.2.15:$guest"
    done
    [ "$(printf '%s\n' "${ports[@]}" | sort -u | wc -l)" = 6 ] || continue
    # 768 MiB of RAM, of which two ranges are the emulated PMem: 128 MiB at
    # 512 MiB (pmem0: DAX) and 64 MiB at 704 MiB (pmem1: ext4 without dax).
    vm_qemu_common 768M "$work/initramfs.cpio" \
        "memmap=128M!512M memmap=64M!704M pmemvm.mode=$mode pmemvm.verbs=$verbs"
    "$qemu" "${VM_QEMU_ARGS[@]}" \
        -drive "file=$work/disk.img,format=raw,if=none,id=page,cache=none,aio=threads" \
        -device virtio-blk-pci,drive=page \
        -netdev "user,id=net0,restrict=on$fwd" \
        -device virtio-net-pci,netdev=net0 \
        -serial "file:$work/console.log" </dev/null >"$work/qemu.log" 2>&1 &
    qemu_pid=$!
    dax_control=127.0.0.1:${ports[0]} dax_data=127.0.0.1:${ports[1]}
    page_control=127.0.0.1:${ports[2]} page_data=127.0.0.1:${ports[3]}
    pmem_page_control=127.0.0.1:${ports[4]} pmem_page_data=127.0.0.1:${ports[5]}
    "$client" wait --control "$dax_control" --control "$page_control" \
        --control "$pmem_page_control" --timeout-s 150 &
    waiter=$! ended="" rc=0
    wait -n -p ended "$waiter" "$qemu_pid" || rc=$?
    if [ "$ended" = "$waiter" ]; then
        [ $rc = 0 ] && break
        fail_with_console "the rpmads did not answer on $dax_control, $page_control and $pmem_page_control"
    fi
    kill "$waiter" 2>/dev/null || true
    wait "$waiter" || true
    qemu_pid=""
    grep -q "forwarding rule" "$work/qemu.log" ||
        fail_with_console "qemu exited before the rpmads answered: $(cat "$work/qemu.log")"
    echo "pmemvm: a port was taken meanwhile; again with others"
    [ $attempt != 5 ] || fail_with_console "qemu could not forward its ports in 5 attempts"
done
tr -d '\r' <"$work/console.log" | grep '^PMEMVM ' | sed 's/^/guest: /' || true

extra=()
[ $mode = fsdax ] || extra=(--devdax-region devdax --not-dax-region notdax)
out=$(timeout 300 "$client" run --dax-control "$dax_control" --dax-data "$dax_data" \
    --page-control "$page_control" --page-data "$page_data" \
    --pmem-page-control "$pmem_page_control" --pmem-page-data "$pmem_page_data" --iterations "$iterations" \
    ${extra[@]+"${extra[@]}"}) ||
    { echo "$out"; fail_with_console "the client failed"; }
echo "$out"

# rpma_core's debug line per registration (tcp_memory_table.cc) names the
# persist method the provider chose: cpu-flush for the DAX daemon's region,
# msync for the page-cache daemon's. The log reaches the console through a
# pipe; stop the VM so that every line is in the file.
kill -KILL "$qemu_pid" && wait "$qemu_pid" 2>/dev/null || true
qemu_pid=""
console=$(tr -d '\r' <"$work/console.log")
for want in "dax\\| .*registered .* persists by cpu-flush" "page\\| .*registered .* persists by msync" \
    "pmempage\\| .*registered .* persists by msync"; do
    line=$(grep -E "^$want" <<<"$console" | head -n 1) ||
        fail_with_console "no debug line '$want' on the console"
    echo "rpma_core: $line"
done
if grep -E "^dax\|.*persists by msync|^(pmem)?page\|.*persists by cpu-flush" <<<"$console"; then
    fail_with_console "a daemon registered a range with the other medium's persist method"
fi
[ "$(grep -c '^PMEMVM UNIT PASS' <<<"$console")" = 2 ] ||
    fail_with_console "the guest did not pass both unit tests on $mode"
if [ $verbs = 1 ]; then
    line=$(grep '^PMEMVM VERBS PASS' <<<"$console") ||
        fail_with_console "the guest's verbs check did not pass"
    echo "guest: $line"
    line=$(grep -E "^daxapm\| .*cache-line granularity.*data\.persistence apm is refused" \
        <<<"$console") || fail_with_console "rpmad on verbs did not say why it refused apm"
    echo "daxapm: $line"
fi
failed=0
echo "pmemvm: PASS"
