#!/usr/bin/env bash
# Installs every Debian 12 package rpma needs to build, test and run, now and
# for the designed future (daemon, client, Soft-RoCE VM tier). Idempotent:
# re-running it on a machine that has everything only checks.
set -euo pipefail

packages=(
  # build
  bazel-bootstrap pkg-config g++ clang libclang-rt-14-dev clang-format
  # data plane: rdma-core (verbs provider, ABI/interop references, perftest)
  libibverbs-dev librdmacm-dev ibverbs-providers ibverbs-utils rdmacm-utils
  perftest librpma-dev librpma0 iproute2
  # persistent memory
  libpmem2-dev
  # control plane, daemon, CLI
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libspdlog-dev libfmt-dev libyaml-cpp-dev libcli11-dev libsystemd-dev nlohmann-json3-dev
  # rpmad's Prometheus metrics (core and pull exposer); promtool checks the
  # scrape and the alert rules in the tests
  prometheus-cpp-dev prometheus
  # rpmad's ChecksumRegion: XXH3-128, compiled in (XXH_INLINE_ALL, headers only)
  libxxhash-dev
  # cluster mode: etcd (the server the tests start) and etcd's v3 API protos
  # (//proto/etcd compiles them from /usr/share/gocode/src)
  etcd-server etcd-client golang-etcd-server-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev gnuplot-nox file openssl valgrind
  # the service and its manual pages: systemd-analyze verify/security, man
  # --warnings, /bin/kill (ExecReload), setpriv (runs rpmad as a user)
  systemd man-db groff-base procps util-linux
  # Debian packages (packaging/): dpkg-shlibdeps, dpkg-gensymbols; lintian
  dpkg-dev lintian
  # librpma's manual pages: generated from the header and checked (rpma_core/man)
  python3
  # Soft-RoCE VM tier
  qemu-system-x86 linux-image-amd64 busybox-static cpio kmod xz-utils zstd
  # power cuts and emulated PMem in VMs (tests/powercut, tests/pmem_vm):
  # mkfs.ext4 for the guest disks, objcopy strips module signatures, ndctl
  # makes devdax namespaces
  e2fsprogs binutils ndctl daxctl
  # the installed client library is built with the system's compiler
  # (tests/integration:installed_client_test, packaging:debs_test)
  gcc g++ pkg-config
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
    missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
