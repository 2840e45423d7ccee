#!/usr/bin/env bash
# The packages of //packaging:debs are what an operator installs:
#   1. lintian finds no error in them, and nothing at all in a manual page
#      (its warnings are printed, and listed with their reasons in README
#      "Install");
#   2. each holds its files at the paths Debian policy and the unit expect,
#      with the metadata apt relies on (versions, Provides/Conflicts/Replaces
#      of librpma0 and librpma-dev, the conffile, the maintainer scripts);
#   3. what is in them works: the library has librpma's soname and symbol
#      versions and its symbols file, the client library its own; pkg-config
#      finds both under /usr; a C program builds against the packaged client
#      headers and library alone (the system's cc, nothing else); the
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
client=$(deb_of librpma-client1)
for d in "${debs[@]}"; do
    field_is "$d" Version "$version"
    has_paths "$d" "/usr/share/doc/$(dpkg-deb -f "$d" Package)/copyright" \
        "/usr/share/doc/$(dpkg-deb -f "$d" Package)/changelog.gz"
done

# --- 1. lintian -------------------------------------------------------------
echo "lintian:"
lintian --fail-on error --display-info --tag-display-limit 0 "${debs[@]}" 2>&1 |
    grep -v 'root privileges' | tee "$work/lintian.txt" || true
if grep -q '^E: ' "$work/lintian.txt"; then
    fail "lintian reports errors (above)"
fi
# lintian rates a manual page that groff complains about or whose NAME line
# whatis cannot read (groff-message, bad-whatis-entry) a warning or less, so
# "no errors" would let a broken page through: any tag on a page fails.
if grep -qE '^[EWI]: .*\[usr/share/man/' "$work/lintian.txt"; then
    fail "lintian reports problems in manual pages (above)"
fi

# --- 2. contents and metadata -------------------------------------------------
has_paths "$rpmad" /usr/sbin/rpmad /lib/systemd/system/rpmad.service /etc/rpmad/rpmad.yaml \
    /usr/lib/sysusers.d/rpmad.conf /usr/lib/tmpfiles.d/rpmad.conf \
    /usr/share/man/man8/rpmad.8.gz /usr/share/man/man5/rpmad.yaml.5.gz
# librpma's manual pages: one per function (rpma_core/man) and the overview.
has_paths "$dev" /usr/share/man/man3/rpma_conn_req_new.3.gz /usr/share/man/man3/rpma_flush.3.gz \
    /usr/share/man/man3/rpma_ext_conn_req_move_to_peer.3.gz /usr/share/man/man7/librpma.7.gz
# One page per function the packaged library exports (84 of librpma's, and
# rpma_core's extensions), named after it.
dpkg-deb --fsys-tarfile "$lib" | tar -xO --wildcards '*/librpma.so.0' >"$work/librpma.so.0"
objdump -T "$work/librpma.so.0" | awk '$3 == "DF" && $4 != "*UND*" { print $NF }' | sort \
    >"$work/exported.txt"
dpkg-deb -c "$dev" | awk '{ print $6 }' | sed -n 's|^\./usr/share/man/man3/\(.*\)\.3\.gz$|\1|p' |
    sort >"$work/pages.txt"
if ! cmp -s "$work/exported.txt" "$work/pages.txt" || [ "$(wc -l <"$work/pages.txt")" -lt 87 ]; then
    fail "$(basename "$dev"): section 3 pages differ from the functions librpma.so.0 exports" \
        "(< page only, > exported only): $(diff "$work/pages.txt" "$work/exported.txt" | grep '^[<>]' | tr '\n' ' ')"
fi
has_paths "$ctl" /usr/bin/rpmactl /usr/share/man/man1/rpmactl.1.gz \
    /usr/share/bash-completion/completions/rpmactl
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
has_paths "$lib" "/usr/lib/$multiarch/librpma.so.0"
has_paths "$client" "/usr/lib/$multiarch/librpma_client.so.1"
has_paths "$dev" /usr/include/rpma_client.h /usr/include/rpma/client/region.h \
    /usr/include/rpma/client/status.h /usr/include/rpma/client/replica_set.h \
    /usr/include/rpma/client/connect_options.h /usr/include/rpma/client/cluster.h \
    "/usr/lib/$multiarch/librpma_client.so" \
    "/usr/lib/$multiarch/pkgconfig/rpma-client.pc"
has_paths "$dev" /usr/include/librpma.h /usr/include/rpma_ext.h /usr/include/rpma/rpma.hpp \
    "/usr/lib/$multiarch/librpma.so" "/usr/lib/$multiarch/pkgconfig/librpma.pc"
# Cluster mode needs an etcd somewhere, not on every node.
field_is "$rpmad" Recommends etcd-server
field_is "$lib" Provides "librpma0 (= $version)"
field_is "$lib" Conflicts librpma0
field_is "$lib" Replaces librpma0
field_is "$dev" Provides "librpma-dev (= $version)"
field_is "$dev" Conflicts librpma-dev
for p in librpma0-rpma librpma-client1; do
    grep -q "$p (= $version)" <<<"$(dpkg-deb -f "$dev" Depends)" ||
        fail "librpma-rpma-dev does not depend on $p (= $version)"
done
for needed in 'libgrpc++' libprometheus-cpp-pull; do
    grep -q "$needed" <<<"$(dpkg-deb -f "$rpmad" Depends)" ||
        fail "rpmad's Depends lack $needed (dpkg-shlibdeps): $(dpkg-deb -f "$rpmad" Depends)"
done
for d in "$rpmad" "$lib" "$dev" "$client"; do
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
cctl=$work/ctl/$(basename "$client")
[ "$(cat "$cctl/triggers")" = "activate-noawait ldconfig" ] || fail "client library without ldconfig trigger"
grep -qx "librpma_client 1 librpma-client1 (>= ${version%%-*})" "$cctl/shlibs" ||
    fail "client shlibs: $(cat "$cctl/shlibs")"
grep -q "^ rpma_client_region_open@RPMA_CLIENT_1.0 " "$cctl/symbols" ||
    fail "client symbols file lacks rpma_client_region_open@RPMA_CLIENT_1.0"

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
for node in LIBRPMA_1.0 RPMA_CORE_EXT_1.0 RPMA_CORE_EXT_1.1; do
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

client_so=$root/usr/lib/$multiarch/librpma_client.so.1
[ "$(objdump -p "$client_so" | awk '$1 == "SONAME" { print $2 }')" = librpma_client.so.1 ] ||
    fail "librpma_client.so.1's SONAME is wrong"
client_symbols=$(objdump -T "$client_so" | grep -v '\*UND\*')
grep -q " RPMA_CLIENT_1.0 *rpma_client_write_persist$" <<<"$client_symbols" ||
    fail "librpma_client.so.1 does not export rpma_client_write_persist in RPMA_CLIENT_1.0"
# Internals stay local: nothing of rpma_core, gRPC's stubs or protobuf.
if grep -qE " (rpma_conn_|_ZN5rpmad|_ZN6google)" <<<"$client_symbols"; then
    fail "librpma_client.so.1 exports internals: $(grep -E " (rpma_conn_|_ZN5rpmad|_ZN6google)" <<<"$client_symbols" | head -3)"
fi
# A program built the way rpma-client.pc says, against the packaged files only.
flags=$(PKG_CONFIG_SYSROOT_DIR="$root" PKG_CONFIG_PATH="$root/usr/lib/$multiarch/pkgconfig" \
    pkg-config --cflags --libs rpma-client)
cat >"$work/uses_client.c" <<'EOC'
#include <rpma_client.h>
#include <stdio.h>
int main(void) {
    struct rpma_client_region *region = NULL;
    int ret = rpma_client_region_open(NULL, 0, "r", NULL, &region);
    printf("%d %s\n", ret, rpma_client_last_error());
    return ret == RPMA_CLIENT_E_INVAL ? 0 : 1;
}
EOC
# shellcheck disable=SC2086 # the flags are words
if ! cc -std=c11 -Wall -Werror "$work/uses_client.c" -o "$work/uses_client" $flags \
    >"$work/cc.log" 2>&1; then
    fail "a C program does not build against the packaged client library: $(cat "$work/cc.log")"
elif ! out=$(LD_LIBRARY_PATH="$root/usr/lib/$multiarch" "$work/uses_client" 2>&1); then
    fail "the program built against the packaged client library fails: $out"
fi

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
