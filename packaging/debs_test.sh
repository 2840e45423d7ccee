#!/usr/bin/env bash
# The packages of //packaging:debs are what an operator installs:
#   1. lintian finds no error in them (its warnings are printed, and listed
#      with their reasons in README "Install");
#   2. each holds its files at the paths Debian policy and the unit expect,
#      with the metadata apt relies on (versions, Provides/Conflicts/Replaces
#      of librpma0 and librpma-dev, the conffile, the maintainer scripts);
#   3. what is in them works: the library has librpma's soname and symbol
#      versions and its symbols file; pkg-config finds it under /usr; the
#      packaged rpmad accepts the packaged configuration; the sysusers.d and
#      tmpfiles.d entries make the rpmad user (in group rdma) and a 0700
#      /var/lib/rpmad owned by it in a scratch root.
#
#   debs_test.sh VERSION RPMAD_SERVICE DEB...
set -euo pipefail

version=$1
unit=$2
shift 2
work=${TEST_TMPDIR:-$(mktemp -d)}/debs
rm -rf "$work"
mkdir -p "$work"
status=0
fail() {
    echo "FAIL: $*"
    status=1
}
deb_of() { # PACKAGE: its .deb among the arguments
    local d
    for d in "${debs[@]}"; do
        [ "$(dpkg-deb -f "$d" Package)" = "$1" ] && { echo "$d"; return; }
    done
    echo "no package $1 among: ${debs[*]}" >&2
    exit 1
}
field_is() { # DEB FIELD VALUE
    local got
    got=$(dpkg-deb -f "$1" "$2")
    [ "$got" = "$3" ] || fail "$(basename "$1"): $2 is '$got', want '$3'"
}
has_paths() { # DEB PATH...: each PATH is in the package
    local deb=$1 list p
    shift
    list=$(dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|')
    for p in "$@"; do
        grep -qxF "$p" <<<"$list" || fail "$(basename "$deb"): no $p"
    done
}

debs=("$@")
rpmad=$(deb_of rpmad)
lib=$(deb_of librpma0-rpma)
dev=$(deb_of librpma-rpma-dev)
ctl=$(deb_of rpmactl)
for d in "${debs[@]}"; do
    field_is "$d" Version "$version"
    has_paths "$d" "/usr/share/doc/$(dpkg-deb -f "$d" Package)/copyright" \
        "/usr/share/doc/$(dpkg-deb -f "$d" Package)/changelog.gz"
done

# --- 1. lintian -------------------------------------------------------------
echo "lintian:"
lintian --fail-on error --tag-display-limit 0 "${debs[@]}" 2>&1 | grep -v 'root privileges' |
    tee "$work/lintian.txt" || true
if grep -q '^E: ' "$work/lintian.txt"; then
    fail "lintian reports errors (above)"
fi

# --- 2. contents and metadata -------------------------------------------------
has_paths "$rpmad" /usr/sbin/rpmad /lib/systemd/system/rpmad.service /etc/rpmad/rpmad.yaml \
    /usr/lib/sysusers.d/rpmad.conf /usr/lib/tmpfiles.d/rpmad.conf \
    /usr/share/man/man8/rpmad.8.gz /usr/share/man/man5/rpmad.yaml.5.gz
# librpma's manual pages: one per function (rpma_core/man) and the overview.
has_paths "$dev" /usr/share/man/man3/rpma_conn_req_new.3.gz /usr/share/man/man3/rpma_flush.3.gz \
    /usr/share/man/man3/rpma_ext_conn_req_move_to_peer.3.gz /usr/share/man/man7/librpma.7.gz
[ "$(dpkg-deb -c "$dev" | grep -c '/usr/share/man/man3/rpma_.*\.3\.gz$')" -eq 86 ] ||
    fail "$(basename "$dev"): not 86 function pages"
has_paths "$ctl" /usr/bin/rpmactl /usr/share/man/man1/rpmactl.1.gz \
    /usr/share/bash-completion/completions/rpmactl
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
has_paths "$lib" "/usr/lib/$multiarch/librpma.so.0"
has_paths "$dev" /usr/include/librpma.h /usr/include/rpma_ext.h /usr/include/rpma/rpma.hpp \
    "/usr/lib/$multiarch/librpma.so" "/usr/lib/$multiarch/pkgconfig/librpma.pc"
field_is "$lib" Provides "librpma0 (= $version)"
field_is "$lib" Conflicts librpma0
field_is "$lib" Replaces librpma0
field_is "$dev" Provides "librpma-dev (= $version)"
field_is "$dev" Conflicts librpma-dev
grep -q "librpma0-rpma (= $version)" <<<"$(dpkg-deb -f "$dev" Depends)" ||
    fail "librpma-rpma-dev does not depend on librpma0-rpma (= $version)"
grep -q 'libgrpc++' <<<"$(dpkg-deb -f "$rpmad" Depends)" ||
    fail "rpmad's Depends lack its shared libraries (dpkg-shlibdeps): $(dpkg-deb -f "$rpmad" Depends)"
for d in "$rpmad" "$lib" "$dev"; do
    mkdir -p "$work/ctl/$(basename "$d")"
    dpkg-deb -e "$d" "$work/ctl/$(basename "$d")"
done
rctl=$work/ctl/$(basename "$rpmad")
[ "$(cat "$rctl/conffiles")" = /etc/rpmad/rpmad.yaml ] ||
    fail "rpmad's conffiles is '$(cat "$rctl/conffiles")', want /etc/rpmad/rpmad.yaml"
for s in postinst prerm postrm; do
    [ -x "$rctl/$s" ] || fail "rpmad has no executable $s"
done
grep -q 'systemd-sysusers rpmad.conf' "$rctl/postinst" || fail "postinst does not create the user"
grep -q 'rm -rf /var/lib/rpmad' "$rctl/postrm" || fail "postrm does not delete the pool on purge"
lctl=$work/ctl/$(basename "$lib")
[ "$(cat "$lctl/triggers")" = "activate-noawait ldconfig" ] || fail "library without ldconfig trigger"
grep -qx "librpma 0 librpma0-rpma (>= ${version%%-*})" "$lctl/shlibs" || fail "shlibs: $(cat "$lctl/shlibs")"

# --- 3. what is in them works ---------------------------------------------------
root=$work/root
for d in "${debs[@]}"; do dpkg-deb -x "$d" "$root"; done
cmp -s "$root/lib/systemd/system/rpmad.service" "$unit" || fail "packaged unit differs from $unit"
so=$root/usr/lib/$multiarch/librpma.so.0
soname=$(objdump -p "$so" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = librpma.so.0 ] || fail "SONAME is '$soname'"
# Read whole before grepping: with pipefail, `objdump | grep -q` fails when
# grep quits early and objdump dies of SIGPIPE.
dynamic_symbols=$(objdump -T "$so")
for node in LIBRPMA_1.0 RPMA_CORE_EXT_1.0; do
    grep -q " $node " <<<"$dynamic_symbols" || fail "librpma.so.0 exports nothing in $node"
    grep -q "@$node " "$lctl/symbols" || fail "symbols file lacks $node"
done
# Stripped as dh_strip would (lintian: unstripped-binary-or-object).
if grep -q '\.debug_info' <<<"$(readelf -S "$so")"; then
    fail "librpma.so.0 is not stripped"
fi
pc_libdir=$(PKG_CONFIG_SYSROOT_DIR="" PKG_CONFIG_PATH="$root/usr/lib/$multiarch/pkgconfig" \
    pkg-config --variable=libdir librpma)
[ "$pc_libdir" = "/usr/lib/$multiarch" ] || fail "librpma.pc libdir is '$pc_libdir'"
[ "$(readlink "$root/usr/lib/$multiarch/librpma.so")" = librpma.so.0 ] ||
    fail "librpma.so does not link to librpma.so.0"

out=$("$root/usr/sbin/rpmad" --check-config "$root/etc/rpmad/rpmad.yaml" 2>&1) ||
    fail "packaged rpmad refuses the packaged rpmad.yaml: $out"

# A scratch root with the rdma group (Debian's libibverbs1 makes it), where
# systemd's own tools apply the packaged entries.
mkdir -p "$root/etc"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nrdma:x:109:\n' >"$root/etc/group"
systemd-sysusers --root="$root" >"$work/sysusers.log" 2>&1 ||
    fail "systemd-sysusers: $(cat "$work/sysusers.log")"
pw=$(grep '^rpmad:' "$root/etc/passwd" || true)
[[ "$pw" == rpmad:x:*:*:*:/var/lib/rpmad:/usr/sbin/nologin ]] || fail "passwd entry '$pw'"
grep -q '^rdma:x:109:rpmad$' "$root/etc/group" || fail "rpmad is not in group rdma: $(cat "$root/etc/group")"
uid=$(cut -d: -f3 <<<"$pw")
[ -n "$uid" ] && [ "$uid" -lt 1000 ] || fail "rpmad's uid '$uid' is not a system uid"
systemd-tmpfiles --root="$root" --create >"$work/tmpfiles.log" 2>&1 ||
    fail "systemd-tmpfiles: $(cat "$work/tmpfiles.log")"
st=$(stat -c '%a %u' "$root/var/lib/rpmad" 2>/dev/null || true)
[ "$st" = "700 $uid" ] || fail "/var/lib/rpmad is '$st', want '700 $uid'"

[ $status = 0 ] && echo "PASS: ${#debs[@]} packages"
exit $status
