#!/usr/bin/env bash
# Builds rpma's Debian packages (rpmad, librpma0-rpma, librpma-rpma-dev, and
# rpmactl once it is in the tree) and copies them into a directory.
#
#   tools/build-debs.sh [--version V] [--out DIR]
#
# V is the packages' Debian version (default: rpma's, version.bzl);
# DIR defaults to ./debs. What is packaged is built with -c opt
# (packaging/debs.bzl). The same as
#   bazel build //packaging:debs --//packaging:version=V
# and taking bazel-bin/packaging/*_V_amd64.deb.
set -euo pipefail
cd "$(dirname "$0")/.."

version="" out=debs
while [ $# -gt 0 ]; do
    case "$1" in
    --version) version=${2:?--version needs a value} && shift 2 ;;
    --out) out=${2:?--out needs a directory} && shift 2 ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
    *) echo "build-debs: unknown argument '$1' (see --help)" >&2 && exit 2 ;;
    esac
done

flags=()
[ -z "$version" ] || flags+=("--//packaging:version=$version")
bazel build ${flags[@]+"${flags[@]}"} //packaging:debs
mkdir -p "$out"
# The files of exactly this build: bazel-bin may hold other versions' too.
mapfile -t debs < <(bazel cquery ${flags[@]+"${flags[@]}"} --output=starlark \
    --starlark:expr='"\n".join([f.path for f in target.files.to_list()])' //packaging:debs 2>/dev/null)
[ ${#debs[@]} -gt 0 ] || { echo "build-debs: bazel built no packages" >&2; exit 1; }
for d in "${debs[@]}"; do
    install -m 0644 "$d" "$out/"
    echo "$out/$(basename "$d")"
done
