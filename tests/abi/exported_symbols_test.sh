#!/usr/bin/env bash
# Our librpma.so.0 must link like Debian's: soname librpma.so.0, every
# exported symbol an rpma_* function in version node LIBRPMA_1.0 (plus the
# node itself), and no rpma_* symbol that Debian's librpma.so.0 lacks. Which
# functions are implemented yet is not this test's business.
#
#   exported_symbols_test.sh OUR_LIBRPMA_SO
set -euo pipefail

ours=$1
debian=/usr/lib/x86_64-linux-gnu/librpma.so.0
version=LIBRPMA_1.0
# rpma_core's extensions (rpma_ext.h): their own nodes, rpma_ext_* only; each
# release of extensions a node of its own (1.1 inherits 1.0), never a symbol
# added to a node already shipped.
ext_versions="RPMA_CORE_EXT_1.0 RPMA_CORE_EXT_1.1 RPMA_CORE_EXT_1.2 RPMA_CORE_EXT_1.3"
is_ext_version() { [[ " $ext_versions " == *" $1 "* ]]; }
status=0
fail() {
    echo "FAIL: $*"
    status=1
}

soname=$(objdump -p "$ours" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = librpma.so.0 ] || fail "soname is '$soname', expected librpma.so.0"

# objdump -T rows are "<address> <flags> <section>\t<size> [<version>] <name>";
# the version is blank for unversioned symbols; *UND* rows are imports.
# Local symbols (flag "l", e.g. the .tbss section symbol thread-local storage
# brings) are not exported and are left out.
# Prints "<section> <version or -> <name>".
dynamic_symbols() {
    objdump -T "$1" | awk -F '\t' '/^[0-9a-f]+ / {
        if (substr($1, 18, 1) == "l") next
        n = split($1, left, " "); m = split($2, right, " ")
        print left[n], (m == 3 ? right[2] : "-"), right[m]
    }'
}

exported=0
while read -r section symbol_version name; do
    if [ "$section" = '*UND*' ]; then
        case "$name" in rpma_*) fail "$name is imported, not defined" ;; esac
        continue
    fi
    case "$name" in
        "$version" | RPMA_CORE_EXT_1.*)
            { [ "$name" = "$version" ] || is_ext_version "$name"; } ||
                fail "version node $name is none of $version $ext_versions"
            [ "$section" = '*ABS*' ] || fail "version node $name is not absolute ($section)"
            ;;
        rpma_ext_*)
            is_ext_version "$symbol_version" ||
                fail "$name has version '$symbol_version', expected one of $ext_versions"
            ;;
        rpma_*)
            exported=$((exported + 1))
            [ "$symbol_version" = "$version" ] ||
                fail "$name has version '$symbol_version', expected $version"
            ;;
        *) fail "$name (version '$symbol_version', section $section) is exported" ;;
    esac
done < <(dynamic_symbols "$ours")
[ "$exported" -gt 0 ] || fail "no rpma_* symbol found in objdump -T output"

extra=$(comm -23 \
    <(dynamic_symbols "$ours" | awk '$1 != "*UND*" && $3 ~ /^rpma_/ && $3 !~ /^rpma_ext_/ { print $3 }' | sort) \
    <(dynamic_symbols "$debian" | awk '$1 != "*UND*" && $3 ~ /^rpma_/ { print $3 }' | sort))
for name in $extra; do
    fail "$name is exported but Debian's librpma.so.0 has no such symbol"
done

[ "$status" -eq 0 ] && echo "PASS: soname librpma.so.0, $exported rpma_* symbols, all $version"
exit "$status"
