#!/usr/bin/env bash
# Builds the initramfs of the VM tier: busybox, the rdma_rxe kernel modules of
# the installed linux-image-amd64, rdma-core userspace (libibverbs, librdmacm,
# the rxe provider), tests/vm/init.sh as /init, vmsync.sh as vmsync, a test
# list, and any files the tests need together with every shared library they
# load.
#
# Usage: build_initrd.sh [-k KERNEL_VERSION] [-t TESTS_LIST] [-w WORKDIR] OUTPUT [FILE...]
#   OUTPUT      the cpio archive; OUTPUT ending in .gz is gzip'ed, otherwise
#               it is left uncompressed (fastest to boot under TCG)
#   FILE        a file to put in the VM: a relative path (a Bazel runfiles
#               path such as tests/vm/rxe_smoke) lands at /t/FILE, where the
#               tests run; an absolute path (a host tool such as
#               /usr/bin/ib_write_lat) lands at the same path
#   -t LIST     becomes /tests.list (format: see init.sh)
#   -k VERSION  kernel version (default: see vm_kernel_version in vm_lib.sh)
#   -w WORKDIR  scratch directory (default: next to OUTPUT)
#
# Shared libraries: every ELF file is run through ldd. Libraries under /lib*
# and /usr keep their path; any other library (e.g. a librpma.so.0 that a
# Bazel binary finds through its $ORIGIN RUNPATH in bazel-bin) is copied to
# /vmlib/<the name the binary asks for>, and init.sh puts /vmlib on
# LD_LIBRARY_PATH, because $ORIGIN-relative RUNPATHs do not survive the move.
set -euo pipefail
trap 'echo "vm: ERROR: build_initrd.sh line $LINENO: \"$BASH_COMMAND\" failed" >&2' ERR

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=vm_lib.sh
source "$here/vm_lib.sh"

kver="" tests_list="" work=""
while getopts "k:t:w:" opt; do
    case "$opt" in
    k) kver=$OPTARG ;;
    t) tests_list=$OPTARG ;;
    w) work=$OPTARG ;;
    *) vm_die "usage: build_initrd.sh [-k KVER] [-t TESTS_LIST] [-w WORKDIR] OUTPUT [FILE...]" ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || vm_die "usage: build_initrd.sh [-k KVER] [-t TESTS_LIST] [-w WORKDIR] OUTPUT [FILE...]"
out=$1
shift
[ -n "$kver" ] || kver=$(vm_kernel_version)
[ -n "$work" ] || work="$(dirname "$out")/initrd-work"

# --- host prerequisites ------------------------------------------------------
for tool in cpio modprobe ldd ldconfig; do
    command -v "$tool" >/dev/null || vm_die "$tool not found: $VM_INSTALL_HINT"
done
busybox=/bin/busybox
[ -x "$busybox" ] || busybox=$(command -v busybox || true)
if [ -z "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
    vm_die "a static busybox is needed: $VM_INSTALL_HINT (package busybox-static)"
fi
rdma_tool=$(command -v rdma || true)
[ -n "$rdma_tool" ] || vm_die "rdma (iproute2) not found: $VM_INSTALL_HINT"
ibv_devinfo=$(command -v ibv_devinfo || true)
[ -n "$ibv_devinfo" ] || vm_die "ibv_devinfo not found: $VM_INSTALL_HINT (ibverbs-utils)"
providers=(/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so)
provider=${providers[0]}
if [ ! -r "$provider" ] || [ ! -r /etc/libibverbs.d/rxe.driver ]; then
    vm_die "the rxe verbs provider is missing: $VM_INSTALL_HINT (ibverbs-providers)"
fi
# (awk reads to the end: an early exit would SIGPIPE ldconfig and, with
# pipefail, fail this line at random)
libgcc_s=$(ldconfig -p | awk '/libgcc_s\.so\.1 .*x86-64/ && !f { f = $NF } END { print f }')
[ -n "$libgcc_s" ] || vm_die "libgcc_s.so.1 not found"

r="$work/root"
rm -rf "$r"
mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,usr/lib,usr/lib64,etc/libibverbs.d,proc,sys,dev,tmp,run,t,vmlib}
ln -s usr/lib "$r/lib" # merged /usr, as on Debian 12: /lib/x86_64-linux-gnu/... resolves
ln -s usr/lib64 "$r/lib64"
mkdir -p "$r/lib/modules/$kver"

# --- busybox -----------------------------------------------------------------
cp "$busybox" "$r/bin/busybox"
for applet in $("$busybox" --list); do
    [ -e "$r/bin/$applet" ] || ln -s busybox "$r/bin/$applet"
done

# --- kernel modules, flattened, with the order init.sh loads them in ----------
# Each list is closed over its dependencies by modprobe (host configuration
# ignored), so a module's prerequisites are always loaded before it.
resolve_modules() { # $1 = list file; rest = module names
    local list=$1 m path
    shift
    : >"$list"
    for m in "$@"; do
        modprobe -C /dev/null -S "$kver" --ignore-install --show-depends "$m" ||
            vm_die "kernel module $m of $kver not found: $VM_INSTALL_HINT (linux-image-amd64)"
    done | while read -r kind path _; do
        [ "$kind" = insmod ] || continue # "builtin x": nothing to load
        local name
        name=$(basename "$path")
        name=${name%%.ko*}
        grep -qx "$name" "$list" "$r/etc/vm-modules" 2>/dev/null && continue
        case "$path" in
        *.ko) cp "$path" "$r/lib/modules/$kver/$name.ko" ;;
        *.ko.xz) xz -dc "$path" >"$r/lib/modules/$kver/$name.ko" ;;
        *.ko.zst) zstd -qdc "$path" >"$r/lib/modules/$kver/$name.ko" ;;
        *.ko.gz) gzip -dc "$path" >"$r/lib/modules/$kver/$name.ko" ;;
        *) vm_die "unexpected module file $path" ;;
        esac
        echo "$name" >>"$list"
    done
}
resolve_modules "$r/etc/vm-modules" configfs ib_core ib_uverbs iw_cm ib_cm rdma_cm rdma_ucm \
    udp_tunnel ip6_udp_tunnel crc32_generic rdma_rxe dummy
grep -qx rdma_rxe "$r/etc/vm-modules" || vm_die "rdma_rxe is not a module of $kver"
# two-VM mode: rxe over virtio-net (virtio_pci is the transport, not a dependency)
resolve_modules "$r/etc/vm-modules-net" virtio_pci virtio_net

# --- userspace ----------------------------------------------------------------
elves=()
put() { # $1 = host file, $2 = path in the VM
    mkdir -p "$r$(dirname "$2")"
    cp -L "$1" "$r$2"
    if [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; then
        elves+=("$1")
    fi
}
put "$rdma_tool" /usr/bin/rdma
put "$ibv_devinfo" /usr/bin/ibv_devinfo
put "$provider" "$provider"
put /etc/libibverbs.d/rxe.driver /etc/libibverbs.d/rxe.driver
put "$libgcc_s" "$libgcc_s" # glibc dlopen()s it to unwind threads; ldd cannot see that
for f in "$@"; do
    [ -e "$f" ] || vm_die "test file $f does not exist (cwd $(pwd))"
    case "$f" in
    /*) put "$f" "$f" ;;
    *) put "$f" "/t/$f" ;;
    esac
done

# shared libraries of every ELF file, transitively (ldd lists the closure)
missing=""
for e in "${elves[@]}"; do
    ldd "$e" 2>/dev/null | awk -v bin="$e" '
        $2 == "=>" && $3 == "not" { print "MISSING", $1, bin; next }
        $2 == "=>" && $3 ~ /^\// { print "LIB", $1, $3; next }
        $1 ~ /^\// { print "LIB", $1, $1 }'
done | sort -u >"$work/libs.txt"
while read -r kind name path; do
    if [ "$kind" = MISSING ]; then
        missing="$missing $name(needed by $path)"
        continue
    fi
    case "$path" in
    /lib/* | /lib64/* | /usr/*) [ -e "$r$path" ] || put "$path" "$path" ;;
    *) put "$path" "/vmlib/$name" ;;
    esac
done <"$work/libs.txt"
[ -z "$missing" ] || vm_die "shared libraries not found on the host:$missing"

echo "root:x:0:0:root:/root:/bin/sh" >"$r/etc/passwd"
echo "root:x:0:" >"$r/etc/group"
printf '/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' >"$r/etc/ld.so.conf"
ldconfig -r "$r" 2>/dev/null || true
cp "$here/init.sh" "$r/init"
cp "$here/vmsync.sh" "$r/usr/bin/vmsync"
chmod 755 "$r/init" "$r/usr/bin/vmsync"
if [ -n "$tests_list" ]; then
    cp "$tests_list" "$r/tests.list"
else
    : >"$r/tests.list"
fi

# --- archive --------------------------------------------------------------------
(cd "$r" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$out.tmp"
case "$out" in
*.gz) gzip -1 <"$out.tmp" >"$out" && rm "$out.tmp" ;;
*) mv "$out.tmp" "$out" ;;
esac
nlibs=$(wc -l <"$work/libs.txt")
rm -rf "$r" "$work/libs.txt"
rmdir "$work" 2>/dev/null || true
echo "vm: initramfs $out: $(du -k "$out" | cut -f1) KiB, kernel $kver, $nlibs shared libraries" >&2
