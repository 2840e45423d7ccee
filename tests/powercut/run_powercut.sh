#!/usr/bin/env bash
# Power cuts: rpmad in a qemu (TCG) VM whose pool directory is on a virtual
# disk backed by a host file; a client on the host writes checksummed,
# sequence-numbered records through the client library, logs each one it got
# acknowledged (fsync'd host file), and cuts the VM's power (SIGKILL of
# qemu) at a random moment. The next boot of the same disk replays ext4's
# journal, rpmad recovers its catalog, and every acknowledged record is read
# back through rpmad's data plane. See README.md.
#
#   run_powercut.sh [--cycles N] [--no-persist] WRITER RPMAD VM_LIB
#
# WRITER: powercut_writer; RPMAD: the daemon; VM_LIB: tests/vm/vm_lib.sh.
# --cycles N: power cuts to run (default 10).
# --no-persist: the client writes without persisting and still logs the
#   records as acknowledged; the run passes only if the harness then reports
#   lost records (it proves that the harness can fail).
# Environment:
#   POWERCUT_CYCLES     overrides --cycles: the long mode is POWERCUT_CYCLES=100
#   POWERCUT_SEED       seed of the cut moments and the churn (default: random,
#                       printed, so a failing run can be repeated)
#   POWERCUT_KEEP       a directory to copy the consoles, ack logs and disk to
#   VM_KERNEL_VERSION, VM_QEMU, VM_ACCEL as in tests/vm/run_vm.sh
# Exit status: 0 when no acknowledged record was lost and every catalog came
# back consistent; 1 on a loss or inconsistency; 2 on a missing prerequisite.
set -euo pipefail

usage="usage: $0 [--cycles N] [--no-persist] WRITER RPMAD VM_LIB"
cycles=10 no_persist=0
while [ $# -gt 0 ]; do
    case $1 in
    --cycles) cycles=${2:?$usage} && shift 2 ;;
    --no-persist) no_persist=1 && shift ;;
    -*) echo "$usage" >&2 && exit 2 ;;
    *) break ;;
    esac
done
[ $# = 3 ] || { echo "$usage" >&2; exit 2; }
writer=$(realpath "$1")
rpmad=$(realpath "$2")
# shellcheck source=../vm/vm_lib.sh
source "$3" # vm_die, vm_kernel_version, vm_copy_modules, vm_boot_image, vm_free_port, ...
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

cycles=${POWERCUT_CYCLES:-$cycles}
seed=${POWERCUT_SEED:-$(($(date +%s%N) % 1000000007))}
[[ $cycles =~ ^[1-9][0-9]*$ ]] || vm_die "POWERCUT_CYCLES=$cycles: give a positive number"
[[ $seed =~ ^[0-9]+$ ]] || vm_die "POWERCUT_SEED=$seed: give a non-negative number"

# --- prerequisites: a missing one fails the test (exit 2), never skips it -----
qemu=${VM_QEMU:-qemu-system-x86_64}
command -v "$qemu" >/dev/null || vm_die "$qemu not found: $VM_INSTALL_HINT (package qemu-system-x86)"
for c in cpio modprobe objcopy mkfs.ext4 timeout; do
    command -v $c >/dev/null || vm_die "$c not found: $VM_INSTALL_HINT"
done
busybox=$(vm_static_busybox)
kver=$(vm_kernel_version) # fails with the hint when /boot or /lib/modules lacks it
kernel=/boot/vmlinuz-$kver

work=$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/powercut.XXXXXX")
qemu_pid=""
failed=1
# Waits for a killed qemu without bash's "Killed" report: a cut is no news.
reap() { wait "$1" 2>/dev/null || true; }
cleanup() {
    if [ -n "$qemu_pid" ]; then kill -KILL "$qemu_pid" 2>/dev/null && reap "$qemu_pid"; fi
    local keep=${POWERCUT_KEEP:-}
    if [ -z "$keep" ] && [ $failed = 1 ] && [ -n "${TEST_UNDECLARED_OUTPUTS_DIR:-}" ]; then
        keep=$TEST_UNDECLARED_OUTPUTS_DIR
    fi
    if [ -n "$keep" ]; then
        mkdir -p "$keep"
        cp -r "$work/state" "$work"/console-*.log "$keep/" 2>/dev/null || true
        [ -z "${POWERCUT_KEEP:-}" ] || cp "$work/disk.img" "$keep/" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

vm_extract_vmlinux "$kernel" "$work/vmlinux" &
extract_pid=$!

# --- initramfs: busybox, the kernel modules, /init -----------------------------
ir=$work/initramfs
vm_busybox_initramfs "$ir" "$busybox" sh mount insmod cat cut sed mkdir chroot ip poweroff
# virtio (PCI), 9p for the host's root, the disk, ext4 and the network;
# from the initramfs, not over 9p.
vm_copy_modules "$ir/mods" "$kver" virtio_pci 9pnet_virtio 9p virtio_blk ext4 virtio_net
install -m 0755 "$here/guest_init.sh" "$ir/init"
echo "RPMAD='$rpmad'" >"$ir/powercut.conf"
vm_pack_initramfs "$ir" "$work/initramfs.cpio"

# --- the disk: ext4 in a host file, kept across every cut ----------------------
# Inode tables and journal initialised here, not lazily by the guest.
vm_ext4_disk "$work/disk.img" 256M
mkdir -p "$work/state"

vm_boot_image "$kernel" "$work/vmlinux" "$extract_pid" # sets VM_BOOT, VM_BIOS

RANDOM=$seed # vm_free_port draws from it

# Boots the VM on the disk with rpmad's data.persistence $2 (boot number $1)
# and waits until rpmad answers on the forwarded control port. Sets
# qemu_pid, control, data.
boot_vm() {
    local n=$1 persistence=$2 attempt cport dport
    for attempt in 1 2 3 4 5; do
        cport=$(vm_free_port)
        dport=$(vm_free_port)
        [ "$cport" != "$dport" ] || continue
        # The disk: cache=none is O_DIRECT on the host file with a volatile
        # write cache shown to the guest, so the guest sends FLUSH/FUA as to
        # a real disk and qemu turns each into fdatasync of the file. What
        # the guest only has in its page cache dies with the process.
        vm_qemu_common 512M "$work/initramfs.cpio" "powercut.persistence=$persistence"
        "$qemu" "${VM_QEMU_ARGS[@]}" \
            -drive "file=$work/disk.img,format=raw,if=none,id=pool,cache=none,aio=threads" \
            -device virtio-blk-pci,drive=pool \
            -netdev "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:$cport-10.0.2.15:7300,hostfwd=tcp:127.0.0.1:$dport-10.0.2.15:7301" \
            -device virtio-net-pci,netdev=net0 \
            -serial "file:$work/console-$n.log" </dev/null >"$work/qemu-$n.log" 2>&1 &
        qemu_pid=$!
        control=127.0.0.1:$cport
        data=127.0.0.1:$dport
        # Whichever ends first: rpmad answering, or qemu (a guest that
        # failed powers off; qemu that cannot bind a port exits at once).
        "$writer" wait --control "$control" --timeout-s 120 &
        local waiter=$! ended="" rc=0
        wait -n -p ended "$waiter" "$qemu_pid" || rc=$?
        if [ "$ended" = "$waiter" ]; then
            [ $rc = 0 ] && return 0
            kill -KILL "$qemu_pid" && reap "$qemu_pid"
            qemu_pid=""
            fail_with_console "$n" "rpmad did not answer on $control within 120 s (boot $n)"
        fi
        kill "$waiter" 2>/dev/null || true
        wait "$waiter" || true
        qemu_pid=""
        grep -q "forwarding rule" "$work/qemu-$n.log" ||
            fail_with_console "$n" "qemu exited before rpmad answered (boot $n)" \
                "$(cat "$work/qemu-$n.log")"
        echo "powercut: port $cport or $dport was taken meanwhile; again with others"
    done
    fail_with_console "$n" "qemu could not forward its ports in 5 attempts"
}

fail_with_console() { # $1 = boot, rest = why
    local n=$1
    shift
    echo "powercut: the last 60 lines of boot $n's console:"
    tr -d '\r' <"$work/console-$n.log" 2>/dev/null | tail -n 60 | sed 's/^/    /'
    echo "powercut: FAIL: $* (seed $seed; rerun with POWERCUT_SEED=$seed)"
    exit 1
}

# Cycle c (1-based): APM on odd cycles, GPSPM on even ones; cycles 3, 4, 7,
# 8, ... also create and delete regions while the records are written, so
# that a catalog change is in flight at some of the cuts.
persistence_of() { [ $(($1 % 2)) = 1 ] && echo apm || echo gpspm; }
churn_of() { [ $(($1 % 4)) = 3 ] || [ $(($1 % 4)) = 0 ]; }

echo "powercut: kernel $kver ($([ "$VM_BOOT" = "$kernel" ] && echo bzImage || echo vmlinux, PVH))," \
    "$cycles cycles, seed $seed$([ "$no_persist" = 1 ] && echo ", WITHOUT persist (must lose records)")"
start=$(date +%s)
acknowledged=0
in_flight_cuts=0
# The records region: room for ~500 records of 256 bytes per cycle (a cycle
# writes 30-400); every check reads it whole, so no bigger than needed.
records_mib=$((2 + cycles / 8))
summary="$work/state/verify-summary"
for ((n = 0; n <= cycles; n++)); do
    next=$((n < cycles ? n + 1 : n))
    boot_started=$(date +%s%N)
    boot_vm "$n" "$(persistence_of "$next")"
    booted=$(date +%s%N)
    if [ "$n" -gt 0 ]; then
        if ! timeout 300 "$writer" verify --control "$control" --data "$data" \
            --state "$work/state" --cycle "$n" | tee "$summary"; then
            if [ "$no_persist" = 1 ] && grep -q '^VERIFY .* lost=[1-9]' "$summary"; then
                echo "powercut: PASS: without persist the harness lost acknowledged records, as it must"
                failed=0
                exit 0
            fi
            fail_with_console "$n" "the check after cut $n failed"
        fi
    fi
    checked=$(date +%s%N)
    echo "powercut: boot $n: rpmad up in $(((booted - boot_started) / 1000000)) ms," \
        "check $(((checked - booted) / 1000000)) ms"
    if [ "$n" = "$cycles" ]; then
        kill -KILL "$qemu_pid" && reap "$qemu_pid"
        qemu_pid=""
        break
    fi
    c=$((n + 1))
    # The cut comes 0.3-2.3 s after the first acknowledged record.
    cut_ms=$((300 + RANDOM % 2000))
    extra=()
    churn_of $c && extra+=(--churn)
    [ "$no_persist" = 1 ] && extra+=(--no-persist)
    out=$(timeout 300 "$writer" write --control "$control" --data "$data" --state "$work/state" \
        --cycle $c --persistence "$(persistence_of $c)" --cut-pid "$qemu_pid" \
        --cut-after-ms $cut_ms --seed $((seed + c)) --records-region-mib $records_mib \
        ${extra[@]+"${extra[@]}"}) ||
        { echo "$out"; fail_with_console "$n" "cycle $c's writer failed"; }
    echo "$out"
    reap "$qemu_pid" # the writer SIGKILLed it
    qemu_pid=""
    acks=$(sed -n 's/^WRITE .* acknowledged=\([0-9]*\).*/\1/p' <<<"$out")
    acknowledged=$((acknowledged + acks))
    grep -Eq 'in_flight_at_cut=(create|delete):' <<<"$out" && in_flight_cuts=$((in_flight_cuts + 1))
done

if [ "$no_persist" = 1 ]; then
    echo "powercut: FAIL: records written without persist all survived; the harness cannot tell"
    exit 1
fi
verified=$(sed -n 's/^VERIFY .* verified=\([0-9]*\).*/\1/p' "$summary")
lost=$(sed -n 's/^VERIFY .* lost=\([0-9]*\).*/\1/p' "$summary")
echo "POWERCUT SUMMARY cycles=$cycles records_acknowledged=$acknowledged" \
    "records_verified=$verified records_lost=$lost catalog_changes_in_flight_at_cut=$in_flight_cuts" \
    "seconds=$(($(date +%s) - start)) seed=$seed"
[ "$verified" = "$acknowledged" ] && [ "$lost" = 0 ] ||
    { echo "powercut: FAIL: verified $verified of $acknowledged acknowledged records"; exit 1; }
failed=0
echo "powercut: PASS"
