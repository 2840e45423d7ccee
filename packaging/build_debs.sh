#!/usr/bin/env bash
# Assembles rpma's Debian packages with dpkg-deb from files Bazel built (the
# debian_packages rule in debs.bzl runs it; see packaging/BUILD.bazel).
#
#   build_debs.sh --version V --arch A --maintainer M
#       --library-package NAME --dev-package NAME
#       --rpmad FILE --unit FILE --config FILE --sysusers FILE --tmpfiles FILE
#       --rpmad-script FILE... --rpmad-man FILE...
#       --library FILE --pc-in FILE --header FILE... --cpp-header FILE...
#       --client-package NAME --client-library FILE --client-pc-in FILE
#       --client-header FILE...
#       [--rpmactl FILE --rpmactl-man FILE... [--rpmactl-completion FILE]]
#       --copyright FILE --changelog FILE --out FILE...
# The --out files are, in order: rpmad, the library, the -dev package, the
# client library and, with --rpmactl, rpmactl.
#
# Paths follow Debian policy and the FHS; dependencies come from
# dpkg-shlibdeps; file times are the changelog's date, so two builds of the
# same tree give the same packages.
set -euo pipefail

die() {
    echo "build_debs: $*" >&2
    exit 1
}

rpmad_man=() rpmad_scripts=() headers=() cpp_headers=() rpmactl_man=() outs=() dev_man_trees=()
client_headers=()
rpmactl="" rpmactl_completion=""
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || die "$1 needs a value"
    case "$1" in
    --version) version=$2 ;;
    --arch) arch=$2 ;;
    --maintainer) maintainer=$2 ;;
    --library-package) lib_pkg=$2 ;;
    --dev-package) dev_pkg=$2 ;;
    --client-package) client_pkg=$2 ;;
    --client-library) client_library=$2 ;;
    --client-pc-in) client_pc_in=$2 ;;
    --client-header) client_headers+=("$2") ;;
    --rpmad) rpmad=$2 ;;
    --unit) unit=$2 ;;
    --config) config=$2 ;;
    --sysusers) sysusers=$2 ;;
    --tmpfiles) tmpfiles=$2 ;;
    --rpmad-script) rpmad_scripts+=("$2") ;;
    --rpmad-man) rpmad_man+=("$2") ;;
    --library) library=$2 ;;
    --pc-in) pc_in=$2 ;;
    --header) headers+=("$2") ;;
    --cpp-header) cpp_headers+=("$2") ;;
    --dev-man-tree) dev_man_trees+=("$2") ;;
    --rpmactl) rpmactl=$2 ;;
    --rpmactl-man) rpmactl_man+=("$2") ;;
    --rpmactl-completion) rpmactl_completion=$2 ;;
    --copyright) copyright=$2 ;;
    --changelog) base_changelog=$2 ;;
    --out) outs+=("$2") ;;
    *) die "unknown argument $1" ;;
    esac
    shift 2
done
[[ "$version" =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || die "version '$version' is not a Debian version"
want=4
[ -z "$rpmactl" ] || want=5
[ ${#outs[@]} = $want ] || die "expected $want --out files, got ${#outs[@]}"

multiarch=$(dpkg-architecture -a"$arch" -qDEB_HOST_MULTIARCH 2>/dev/null)
libdir=/usr/lib/$multiarch
work=$(mktemp -d "${TMPDIR:-/tmp}/build_debs.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The changelog: --changelog (packaging/changelog), with an entry for $version on top when
# the build asks for another version (a local build, an upgrade test).
changelog=$work/changelog
top=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$base_changelog")
date=$(sed -n '/^ -- /{s/^ -- .*>  //p;q}' "$base_changelog")
if [ "$version" != "$top" ]; then
    printf 'rpma (%s) bookworm; urgency=medium\n\n  * Built from the rpma tree.\n\n -- %s  %s\n\n' \
        "$version" "$maintainer" "$date" >"$changelog"
fi
cat "$base_changelog" >>"$changelog"
export SOURCE_DATE_EPOCH
SOURCE_DATE_EPOCH=$(date -d "$date" +%s)

# --- helpers ---------------------------------------------------------------
# put MODE SRC DEST: a file into the package tree being built ($root).
put() {
    install -D -m "$1" "$2" "$root$3"
}
# strip_elf DEST [--shared]: what Debian strips (dh_strip): debug symbols,
# .comment and .note sections.
strip_elf() {
    local extra=()
    [ "${2:-}" != --shared ] || extra=(--strip-unneeded)
    strip --remove-section=.comment --remove-section=.note ${extra[@]+"${extra[@]}"} "$root$1"
}
man_page() { # SRC: gzipped into its section's directory
    local name section
    name=$(basename "$1")
    section=${name##*.}
    mkdir -p "$root/usr/share/man/man$section"
    gzip -9nc "$1" >"$root/usr/share/man/man$section/$name.gz"
}
# shlib_depends PACKAGE FILE...: the Depends of the ELF files, as
# dpkg-shlibdeps computes them from the installed libraries' shlibs/symbols.
shlib_depends() {
    local pkg=$1 d=$work/shlibdeps
    shift
    mkdir -p "$d/debian"
    printf 'Source: rpma\n\nPackage: %s\nArchitecture: any\n' "$pkg" >"$d/debian/control"
    (cd "$d" && dpkg-shlibdeps -O "$@" 2>"$d/err") | sed -n 's/^shlibs:Depends=//p' ||
        die "dpkg-shlibdeps failed: $(cat "$d/err")"
}
# begin PACKAGE: a fresh tree in $root with the copyright and changelog.
begin() {
    pkg=$1
    root=$work/$pkg
    mkdir -p "$root/DEBIAN"
    put 0644 "$copyright" "/usr/share/doc/$pkg/copyright"
    gzip -9nc "$changelog" >"$root/usr/share/doc/$pkg/changelog.gz"
}
# finish OUT CONTROL-FIELDS: control (with Installed-Size), md5sums,
# permissions and times, then dpkg-deb.
finish() {
    local out=$1 fields=$2 size
    find "$root" -type d -exec chmod 0755 {} +
    size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
    {
        printf 'Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: %s\n' \
            "$pkg" "$version" "$arch" "$maintainer"
        printf 'Installed-Size: %s\n%s\n' "$size" "$fields"
    } >"$root/DEBIAN/control"
    (cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
        xargs -0 md5sum) >"$root/DEBIAN/md5sums"
    find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    dpkg-deb --root-owner-group -Zxz --build "$root" "$out" >/dev/null
}

# --- rpmad: the daemon as a service -----------------------------------------
begin rpmad
put 0755 "$rpmad" /usr/sbin/rpmad
strip_elf /usr/sbin/rpmad
put 0644 "$unit" /lib/systemd/system/rpmad.service
put 0644 "$config" /etc/rpmad/rpmad.yaml
put 0644 "$sysusers" /usr/lib/sysusers.d/rpmad.conf
put 0644 "$tmpfiles" /usr/lib/tmpfiles.d/rpmad.conf
for m in "${rpmad_man[@]}"; do man_page "$m"; done
for s in "${rpmad_scripts[@]}"; do install -m 0755 "$s" "$root/DEBIAN/$(basename "$s")"; done
echo /etc/rpmad/rpmad.yaml >"$root/DEBIAN/conffiles"
finish "${outs[0]}" "Depends: $(shlib_depends rpmad "$root/usr/sbin/rpmad"), systemd-sysusers, systemd-tmpfiles
Recommends: etcd-server
Section: net
Priority: optional
Description: rpma replication daemon: persistent-memory regions over RDMA
 rpmad keeps persistent-memory regions (files of a pool directory, on a DAX
 filesystem for real persistent memory) and serves them to rpma clients: a
 gRPC control plane creates regions and opens sessions, and an rpma data
 plane takes one-sided RDMA writes, reads and flushes into them, over RDMA
 (verbs) or, without an RNIC, software RDMA over TCP.
 .
 This package runs it as the systemd service rpmad.service, as the
 unprivileged user rpmad, with its regions in /var/lib/rpmad and its
 configuration in /etc/rpmad/rpmad.yaml."

# library_files SONAME: the shared library $root$libdir/SONAME stripped and
# checked, with its shlibs, its symbols file (every exported symbol with its
# version node, so that programs get a dependency on the version that has
# what they use) and the ldconfig trigger.
library_files() {
    local so=$1 soname
    strip_elf "$libdir/$so" --shared
    soname=$(objdump -p "$root$libdir/$so" | awk '$1 == "SONAME" { print $2 }')
    [ "$soname" = "$so" ] || die "$so: SONAME is '$soname'"
    echo "${so%%.so.*} ${so##*.so.} $pkg (>= $upstream)" >"$root/DEBIAN/shlibs"
    rm -rf "$work/gensymbols"
    mkdir -p "$work/gensymbols/debian"
    printf 'Source: rpma\n\nPackage: %s\nArchitecture: any\n' "$pkg" >"$work/gensymbols/debian/control"
    cp "$changelog" "$work/gensymbols/debian/changelog"
    (cd "$work/gensymbols" && dpkg-gensymbols -q -p"$pkg" -P"$root" -v"$upstream" \
        -O"$root/DEBIAN/symbols") || die "dpkg-gensymbols failed for $so"
    echo "activate-noawait ldconfig" >"$root/DEBIAN/triggers"
}
upstream=${version%%-*}

# --- the library: librpma.so.0 of rpma_core ----------------------------------
begin "$lib_pkg"
put 0644 "$library" "$libdir/librpma.so.0"
library_files librpma.so.0
finish "${outs[1]}" "Depends: $(shlib_depends "$lib_pkg" "$root$libdir/librpma.so.0")
Provides: librpma0 (= $version)
Conflicts: librpma0
Replaces: librpma0
Multi-Arch: same
Section: libs
Priority: optional
Description: remote persistent memory access library (rpma_core)
 librpma.so.0 with librpma's soname and symbol versions (LIBRPMA_1.0; the
 extensions in RPMA_CORE_EXT_1.0 and 1.1): a drop-in for Debian's librpma0 that
 programs built against librpma run on unchanged. It carries RDMA writes,
 reads, flushes and messages over rdma-core (verbs, for RNICs and
 Soft-RoCE) or over TCP, which needs no RNIC (RPMA_PROVIDER=auto|verbs|tcp)."

# --- the client library: librpma_client.so.1 ----------------------------------
begin "$client_pkg"
put 0644 "$client_library" "$libdir/librpma_client.so.1"
library_files librpma_client.so.1
finish "${outs[3]}" "Depends: $(shlib_depends "$client_pkg" "$root$libdir/librpma_client.so.1")
Multi-Arch: same
Section: libs
Priority: optional
Description: rpma client library: replicate buffers on rpmad replicas
 librpma_client.so.1 opens a region on a set of rpmad daemons and
 replicates writes into it by one-sided RDMA writes and flushes, acknowledging
 durability only once every replica (or a configured quorum) confirmed it.
 Failed replicas are reported, excluded and can be re-added with a resync.
 It has a C API (rpma_client.h) and a C++20 API (rpma/client/region.h)."

# --- the -dev package: headers, the link, pkg-config -------------------------
begin "$dev_pkg"
for h in "${headers[@]}"; do put 0644 "$h" "/usr/include/$(basename "$h")"; done
for h in "${cpp_headers[@]}"; do put 0644 "$h" "/usr/include/rpma/$(basename "$h")"; done
# The client's headers keep their layout under client/include/.
for h in "${client_headers[@]}"; do put 0644 "$h" "/usr/include/${h##*client/include/}"; done
for tree in ${dev_man_trees[@]+"${dev_man_trees[@]}"}; do
    for page in "$tree"/share/man/man*/*; do man_page "$page"; done
done
mkdir -p "$root$libdir/pkgconfig"
ln -s librpma.so.0 "$root$libdir/librpma.so"
ln -s librpma_client.so.1 "$root$libdir/librpma_client.so"
# The pkg-config files say the packages' upstream version, as the shlibs do.
pc_fields=(-e 's|@PREFIX@|/usr|' -e "s|@VERSION@|$upstream|" -e "s|^libdir=.*|libdir=$libdir|"
    -e "s|^includedir=.*|includedir=/usr/include|")
sed "${pc_fields[@]}" "$pc_in" >"$root$libdir/pkgconfig/librpma.pc"
sed "${pc_fields[@]}" "$client_pc_in" >"$root$libdir/pkgconfig/rpma-client.pc"
finish "${outs[2]}" "Depends: $lib_pkg (= $version), $client_pkg (= $version), libibverbs-dev, librdmacm-dev
Provides: librpma-dev (= $version)
Conflicts: librpma-dev
Replaces: librpma-dev
Multi-Arch: same
Section: libdevel
Priority: optional
Description: remote persistent memory access library (rpma_core) - development files
 The headers of librpma's C API (librpma.h) and of rpma_core's extensions
 (rpma_ext.h), the header-only C++ layer over them (rpma/rpma.hpp: RAII
 owners, errors as values), the librpma.so link and librpma.pc, to build
 programs against the $lib_pkg library. A drop-in for Debian's
 librpma-dev.
 .
 Also the client library's headers (rpma_client.h, rpma/client/*.h), the
 librpma_client.so link and rpma-client.pc, to build programs against
 $client_pkg."

# --- rpmactl: the command line of rpmad's control plane ----------------------
if [ -n "$rpmactl" ]; then
    begin rpmactl
    put 0755 "$rpmactl" /usr/bin/rpmactl
    strip_elf /usr/bin/rpmactl
    for m in "${rpmactl_man[@]}"; do man_page "$m"; done
    if [ -n "$rpmactl_completion" ]; then
        put 0644 "$rpmactl_completion" /usr/share/bash-completion/completions/rpmactl
    fi
    finish "${outs[4]}" "Depends: $(shlib_depends rpmactl "$root/usr/bin/rpmactl")
Section: net
Priority: optional
Description: command-line client of the rpma replication daemon
 rpmactl talks to rpmad's gRPC control plane: health, regions (create,
 list, delete), sessions, and putting a file into a region or getting it
 back over the data plane."
fi
