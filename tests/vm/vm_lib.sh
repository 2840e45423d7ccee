# shellcheck shell=bash
# Shared by the VM harnesses (sourced, bash): build_initrd.sh and run_vm.sh
# here, tests/powercut and tests/pmem_vm.

vm_die() {
    echo "vm: ERROR: $*" >&2
    exit 2
}

VM_INSTALL_HINT="install with tools/install-deps.sh"

# Prints the kernel version the VM boots: $VM_KERNEL_VERSION, or else the
# newest version that has both /boot/vmlinuz-<v> and /lib/modules/<v>
# (the installed linux-image-amd64; the host's `uname -r` is irrelevant).
vm_kernel_version() {
    if [ -n "${VM_KERNEL_VERSION:-}" ]; then
        [ -r "/boot/vmlinuz-$VM_KERNEL_VERSION" ] ||
            vm_die "VM_KERNEL_VERSION=$VM_KERNEL_VERSION: /boot/vmlinuz-$VM_KERNEL_VERSION not readable"
        [ -r "/lib/modules/$VM_KERNEL_VERSION/modules.dep" ] ||
            vm_die "VM_KERNEL_VERSION=$VM_KERNEL_VERSION: no /lib/modules/$VM_KERNEL_VERSION/modules.dep"
        echo "$VM_KERNEL_VERSION"
        return
    fi
    local v best=""
    for f in /boot/vmlinuz-*; do
        [ -r "$f" ] || continue
        v=${f#/boot/vmlinuz-}
        [ -r "/lib/modules/$v/modules.dep" ] || continue
        best=$(printf '%s\n%s\n' "$best" "$v" | sed '/^$/d' | sort -V | tail -n 1)
    done
    [ -n "$best" ] || vm_die "no kernel with modules for the VM (/boot/vmlinuz-* and" \
        "/lib/modules/<version>): $VM_INSTALL_HINT (package linux-image-amd64)"
    echo "$best"
}

# Extracts the uncompressed kernel (vmlinux) from the bzImage $1 into $2, if
# qemu can boot it directly (PVH entry note). Booting it skips the kernel's
# self-decompression, which under TCG costs ~2.5 s per VM; extracting costs
# ~0.6 s on the host. Fails (status 1) when it cannot; then boot $1.
vm_extract_vmlinux() {
    local img=$1 out=$2 magic tool off
    command -v readelf >/dev/null || return 1
    for spec in 'xz:\xfd7zXZ' 'zstd -q:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
        tool=${spec%%:*}
        magic=$(printf '%b' "${spec#*:}")
        command -v "${tool%% *}" >/dev/null || continue
        for off in $(LC_ALL=C grep -abo "$magic" "$img" 2>/dev/null | head -n 3 | cut -d: -f1); do
            tail -c "+$((off + 1))" "$img" | $tool -dc 2>/dev/null >"$out" || true
            if [ "$(head -c 4 "$out" | od -An -c | tr -d ' ')" = '177ELF' ] &&
                readelf -n "$out" 2>/dev/null | grep -q 'Xen.*0x00000012'; then
                return 0
            fi
        done
    done
    rm -f "$out"
    return 1
}

# vm_copy_modules DIR KVER MODULE...: the modules, each closed over its
# dependencies by the host's modprobe (its configuration ignored), into
# DIR/<name>.ko uncompressed and without their appended signatures (checking
# one, RSA, is slow under TCG; Debian's kernel loads an unsigned module and
# marks itself tainted), and their names in DIR/order in the order insmod
# must load them. A module already in DIR/order is not copied again.
vm_copy_modules() {
    local dir=$1 kver=$2 m
    shift 2
    mkdir -p "$dir"
    for m in "$@"; do
        modprobe -C /dev/null -S "$kver" --ignore-install --show-depends "$m" ||
            vm_die "kernel module $m of $kver not found: $VM_INSTALL_HINT (linux-image-amd64)"
    done | while read -r kind path _; do
        [ "$kind" = insmod ] || continue # "builtin x": nothing to load
        name=$(basename "$path")
        name=${name%%.ko*}
        ! grep -qx "$name" "$dir/order" 2>/dev/null || continue
        case $path in
        *.ko) cp "$path" "$dir/$name.ko" ;;
        *.ko.xz) xz -dc "$path" >"$dir/$name.ko" ;;
        *.ko.zst) zstd -dcq "$path" >"$dir/$name.ko" ;;
        *) vm_die "unexpected module file $path" ;;
        esac
        objcopy --strip-debug "$dir/$name.ko"
        echo "$name" >>"$dir/order"
    done
}

# Prints the path of a statically linked busybox (the guests' userland
# before the host's root is mounted), or dies with the hint.
vm_static_busybox() {
    local busybox
    busybox=$(command -v busybox) || vm_die "busybox not found: $VM_INSTALL_HINT (package busybox-static)"
    ! ldd "$busybox" >/dev/null 2>&1 ||
        vm_die "$busybox is dynamically linked: $VM_INSTALL_HINT (package busybox-static)"
    echo "$busybox"
}

# vm_busybox_initramfs DIR BUSYBOX APPLET...: the layout a harness's /init
# expects in DIR: bin/ with busybox and a link per applet, mods/ for
# vm_copy_modules, and the mount points proc, sys, dev and host (the host's
# root over 9p).
vm_busybox_initramfs() {
    local dir=$1 busybox=$2 applet
    shift 2
    mkdir -p "$dir"/{bin,mods,proc,sys,dev,host}
    cp "$busybox" "$dir/bin/busybox"
    for applet in "$@"; do ln -s busybox "$dir/bin/$applet"; done
}

# vm_pack_initramfs DIR OUT: DIR's contents as a newc cpio archive.
vm_pack_initramfs() {
    (cd "$1" && find . -mindepth 1 | cpio -o -H newc --quiet) >"$2"
}

# vm_ext4_disk FILE SIZE: an ext4 file system in a host file, its inode
# tables and journal initialised here rather than lazily by the guest.
vm_ext4_disk() {
    truncate -s "$2" "$1"
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$1"
}

# vm_boot_image KERNEL VMLINUX EXTRACT_PID: once vm_extract_vmlinux (run in
# the background as EXTRACT_PID) is done, sets VM_BOOT to the image to boot
# (VMLINUX when it was extracted, else KERNEL) and the array VM_BIOS to the
# qemu arguments of the firmware: qboot starts faster than SeaBIOS when the
# kernel boots by its PVH entry.
vm_boot_image() {
    local f
    VM_BOOT=$1
    VM_BIOS=()
    if wait "$3"; then VM_BOOT=$2; fi
    [ "$VM_BOOT" != "$1" ] || return 0
    for f in /usr/share/qemu/qboot.rom /usr/share/qemu/bios-microvm.bin; do
        [ -r "$f" ] && VM_BIOS=(-bios "$f") && break
    done
    return 0
}

# Prints a TCP port nothing listens on now (qemu fails if it is taken by
# the time it binds; callers retry). Draws from $RANDOM, so seeding RANDOM
# repeats the choice.
vm_free_port() {
    local p
    while :; do
        p=$((20000 + RANDOM % 40000))
        ! grep -qi ":$(printf '%04X' $p) 00000000:0000 0A" /proc/net/tcp && echo $p && return
    done
}

# vm_qemu_common MEMORY INITRD APPEND: sets the array VM_QEMU_ARGS to what
# the harnesses' VMs share: $VM_ACCEL (default tcg) on a plain PC with one
# CPU and MEMORY, no default devices, the image vm_boot_image chose with
# INITRD and the common kernel arguments followed by APPEND, and the host's
# root read-only over 9p (mount tag hostroot). Callers add the disks, the
# network and the console.
vm_qemu_common() {
    # shellcheck disable=SC2034,SC2054 # set for the caller; the commas are inside option values
    VM_QEMU_ARGS=(-accel "${VM_ACCEL:-tcg}" -machine pc -cpu qemu64 -m "$1" -smp 1
        -nodefaults -no-user-config -display none -no-reboot ${VM_BIOS[@]+"${VM_BIOS[@]}"}
        -kernel "$VM_BOOT" -initrd "$2"
        -append "console=ttyS0 rdinit=/init panic=-1 quiet loglevel=3 cryptomgr.notests $3"
        -fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap
        -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot)
}
