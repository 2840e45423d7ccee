#!/usr/bin/env bash
# rpma_core's librpma.pc is a valid pkg-config file for an install under
# /usr/local (the default PREFIX).
set -euo pipefail
dir=$(cd "$(dirname "$1")" && pwd)
libs=$(PKG_CONFIG_PATH=$dir pkg-config --libs librpma)
cflags=$(PKG_CONFIG_PATH=$dir pkg-config --cflags librpma)
version=$(PKG_CONFIG_PATH=$dir pkg-config --modversion librpma)
echo "libs: $libs; cflags: $cflags; version: $version"
has() { [[ " $1 " == *" $2 "* ]] || { echo "FAIL: '$2' missing from '$1'"; exit 1; }; }
has "$libs" -L/usr/local/lib
has "$libs" -lrpma
has "$cflags" -I/usr/local/include
[ "$version" = "$2" ] || { echo "FAIL: version $version, expected $2 (version.bzl)"; exit 1; }
