#!/usr/bin/env bash
# Runs tests on real verbs (Soft-RoCE, rdma_rxe) inside qemu VMs (TCG) and
# reports from the serial console. Used by vm_test() (vm_test.bzl); runnable
# by hand from a directory where the test files are (see README.md).
#
# Usage: run_vm.sh [--nodes 1|2] [--vm-timeout SECS] [--memory MB] [--keep DIR]
#                  [--case NAME NODE TIMEOUT COMMAND]... [--file PATH]... [--files "PATH..."]
#   --case      a test: NODE is 1, 2 or '*' (every VM); TIMEOUT in seconds;
#               COMMAND is one shell command line run in the VM (see init.sh
#               for its working directory and environment)
#   --file      a file the tests need, copied into the VM with its shared
#               libraries (see build_initrd.sh for where it lands); --files
#               takes a space-separated list (Bazel's $(rootpaths ...))
#   --nodes 2   two VMs joined by a qemu socket netdev on 127.0.0.1: rxe0
#               runs over virtio-net and RoCEv2 packets cross a wire
#   --vm-timeout  hard limit on the VMs' run time (default 240 s)
#   --keep DIR  keep the initramfs and the consoles (vm-node<N>-console.log)
#               in DIR
# Environment: VM_KERNEL_VERSION (default: newest /boot/vmlinuz-* with
# modules), VM_QEMU (default qemu-system-x86_64), VM_ACCEL (default tcg),
# VM_VMLINUX=0 (boot the compressed bzImage instead of the extracted vmlinux),
# VM_SMP (virtual CPUs per VM, default 1).
#
# Exit status: 0 only if every expected test printed PASS and every VM
# printed VMTEST-DONE with the expected count. qemu's own exit status means
# nothing (the VM powers off either way). 1: a test failed or is missing;
# 2: usage error or a missing prerequisite.
set -euo pipefail
trap 'echo "vm: ERROR: run_vm.sh line $LINENO: \"$BASH_COMMAND\" failed" >&2' ERR

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Under `bazel test` this script is the test executable, a link named after
# the test in the package that declared it: the harness is in the runfiles.
if [ -n "${TEST_SRCDIR:-}" ] && [ -f "$TEST_SRCDIR/${TEST_WORKSPACE:-rpma}/tests/vm/vm_lib.sh" ]; then
    here=$TEST_SRCDIR/${TEST_WORKSPACE:-rpma}/tests/vm
fi
# shellcheck source-path=SCRIPTDIR source=vm_lib.sh
source "$here/vm_lib.sh"

nodes=1 vm_timeout=240 memory=512 keep=""
case_names=() case_nodes=() case_tmos=() case_cmds=() files=()
while [ $# -gt 0 ]; do
    case "$1" in
    --nodes) nodes=$2 && shift 2 ;;
    --vm-timeout) vm_timeout=$2 && shift 2 ;;
    --memory) memory=$2 && shift 2 ;;
    --keep) keep=$2 && shift 2 ;;
    --file) files+=("$2") && shift 2 ;;
    --files) read -r -a more <<<"$2" && files+=(${more[@]+"${more[@]}"}) && shift 2 ;;
    --case)
        [ $# -ge 5 ] || vm_die "--case needs NAME NODE TIMEOUT COMMAND"
        [[ "$2" =~ ^[A-Za-z0-9_.-]+$ ]] || vm_die "test name '$2': use [A-Za-z0-9_.-]"
        [[ "$3" =~ ^(1|2|\*)$ ]] || vm_die "test $2: node '$3' is not 1, 2 or *"
        [[ "$4" =~ ^[0-9]+$ ]] || vm_die "test $2: timeout '$4' is not a number of seconds"
        [[ "$5" != *$'\t'* && "$5" != *$'\n'* ]] || vm_die "test $2: tab or newline in command"
        case_names+=("$2") case_nodes+=("$3") case_tmos+=("$4") case_cmds+=("$5")
        shift 5
        ;;
    *) vm_die "unknown argument '$1' (see the usage at the top of $0)" ;;
    esac
done
[[ "$nodes" =~ ^[12]$ ]] || vm_die "--nodes must be 1 or 2"
[ ${#case_names[@]} -gt 0 ] || vm_die "no --case given"
for i in "${!case_names[@]}"; do
    [ "${case_nodes[$i]}" != 2 ] || [ "$nodes" = 2 ] ||
        vm_die "test ${case_names[$i]} is for node 2 but --nodes is 1"
    for ((j = 0; j < i; j++)); do
        if [ "${case_names[$i]}" = "${case_names[$j]}" ] &&
            [ "${case_nodes[$i]}" = "${case_nodes[$j]}" ]; then
            vm_die "test ${case_names[$i]} is listed twice for node ${case_nodes[$i]}"
        fi
    done
done

# --- prerequisites: a missing one is an error, never a skip --------------------
qemu=${VM_QEMU:-qemu-system-x86_64}
command -v "$qemu" >/dev/null ||
    vm_die "$qemu not found: $VM_INSTALL_HINT (package qemu-system-x86)"
kver=$(vm_kernel_version)
kernel=/boot/vmlinuz-$kver

t_start=$(date +%s.%N)
elapsed() { awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

if [ -n "${TEST_TMPDIR:-}" ]; then
    work=$(mktemp -d "$TEST_TMPDIR/vm.XXXXXX")
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/rpma-vm.XXXXXX")
fi
pids=() extract_pid=""
cleanup() { # the VMs, the extraction, and ~80 MB of kernel and initramfs
    local p
    for p in "${pids[@]}" $extract_pid; do
        kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
    done
    rm -rf "$work"
    return 0
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# --- initramfs ----------------------------------------------------------------
list=$work/tests.list
: >"$list"
for i in "${!case_names[@]}"; do
    printf '%s\t%s\t%s\t%s\n' "${case_names[$i]}" "${case_nodes[$i]}" "${case_tmos[$i]}" \
        "${case_cmds[$i]}" >>"$list"
done
# (the kernel is extracted on the other core while the initramfs is built)
if [ "${VM_VMLINUX:-1}" = 1 ]; then
    vm_extract_vmlinux "$kernel" "$work/vmlinux" &
    extract_pid=$!
fi
initrd=$work/initrd.cpio
"$here/build_initrd.sh" -k "$kver" -t "$list" -w "$work/initrd-work" "$initrd" \
    ${files[@]+"${files[@]}"}
boot=bzImage
if [ -n "$extract_pid" ] && wait "$extract_pid"; then
    kernel=$work/vmlinux boot="vmlinux (PVH)"
fi
extract_pid=""
echo "vm: kernel $kver booted as $boot, $nodes VM(s), ${#case_names[@]} test(s), ready at $(elapsed)s"

# --- boot -----------------------------------------------------------------------
# $1 = node; the rest = extra qemu arguments. Sets vm_pid.
start_vm() {
    local n=$1
    shift
    "$qemu" -accel "${VM_ACCEL:-tcg}" -cpu max -smp "${VM_SMP:-1}" -m "$memory" \
        -nographic -nodefaults -serial stdio -no-reboot \
        -kernel "$kernel" -initrd "$initrd" \
        -append "console=ttyS0 panic=-1 quiet loglevel=3 vmnode=$n vmnodes=$nodes" \
        "$@" </dev/null >"$work/node$n.log" 2>&1 &
    vm_pid=$!
    pids+=("$vm_pid")
}

# Is the qemu with pid $1 listening on 127.0.0.1:$2? (/proc/net/tcp, LISTEN
# state 0A, and the socket's inode among that process's file descriptors)
listening() {
    local pid=$1 hex inode fd
    hex=$(printf '0100007F:%04X' "$2")
    inode=$(awk -v a="$hex" '$2 == a && $4 == "0A" { print $10; exit }' /proc/net/tcp)
    [ -n "$inode" ] || return 1
    for fd in "/proc/$pid/fd/"*; do
        [ "$(readlink "$fd" 2>/dev/null)" = "socket:[$inode]" ] && return 0
    done
    return 1
}

if [ "$nodes" = 1 ]; then
    start_vm 1
else
    # The port is picked at random and retried if taken, so parallel runs
    # (other workspaces, other users) do not collide. VM 2 starts only once
    # VM 1's qemu listens: its connect= fails at once otherwise.
    port="" tries=0
    while [ -z "$port" ]; do
        tries=$((tries + 1))
        [ $tries -le 20 ] || vm_die "no free 127.0.0.1 port for -netdev socket after 20 tries"
        p=$((20000 + (RANDOM * 32768 + RANDOM + $$) % 40000))
        start_vm 1 -netdev "socket,id=n0,listen=127.0.0.1:$p" \
            -device virtio-net-pci,netdev=n0,mac=52:54:00:12:34:01,romfile=
        for _ in $(seq 100); do
            if listening "$vm_pid" "$p"; then
                port=$p
                break
            fi
            kill -0 "$vm_pid" 2>/dev/null || break
            sleep 0.05
        done
        if [ -z "$port" ]; then
            kill -KILL "$vm_pid" 2>/dev/null || true
            wait "$vm_pid" 2>/dev/null || true
            grep -qiE "in use|bind" "$work/node1.log" ||
                vm_die "VM 1 did not start: $(tail -n 5 "$work/node1.log")"
            echo "vm: port $p is taken, trying another one"
        fi
    done
    start_vm 2 -netdev "socket,id=n0,connect=127.0.0.1:$port" \
        -device virtio-net-pci,netdev=n0,mac=52:54:00:12:34:02,romfile=
    echo "vm: two VMs linked through 127.0.0.1:$port"
fi

# --- wait, with a hard deadline ----------------------------------------------------
deadline=$(($(date +%s) + vm_timeout))
timed_out=0
while :; do
    running=0
    for p in "${pids[@]}"; do
        kill -0 "$p" 2>/dev/null && running=1
    done
    [ $running = 1 ] || break
    if [ "$(date +%s)" -ge "$deadline" ]; then
        timed_out=1
        break
    fi
    # a VM that cannot set up RDMA fails the run now, not at the deadline
    if grep -qs "^VMTEST-SETUP-FAILED" "$work"/node*.log; then
        break
    fi
    sleep 0.2
done
for p in "${pids[@]}"; do
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
done
[ $timed_out = 0 ] || echo "vm: hard timeout: the VMs ran for more than $vm_timeout s; killed"
echo "vm: VMs finished at $(elapsed)s"

# --- verdict from the consoles -------------------------------------------------------
failed=()
for n in $(seq "$nodes"); do
    log=$work/node$n.log
    tr -d '\r' <"$log" >"$log.clean"
    expected=0
    for i in "${!case_names[@]}"; do
        name=${case_names[$i]}
        [ "${case_nodes[$i]}" = "*" ] || [ "${case_nodes[$i]}" = "$n" ] || continue
        expected=$((expected + 1))
        line=$(grep -E "^VMTEST $name (PASS|FAIL) " "$log.clean" | head -n 1 || true)
        if [ -z "$line" ]; then
            echo "VMTEST $name MISSING (node $n: no result line)"
            failed+=("$name(node $n: missing)")
        else
            echo "$line (node $n)"
            [[ "$line" == "VMTEST $name PASS "* ]] || failed+=("$name(node $n)")
        fi
        grep -F "[$name] RESULT " "$log.clean" | sed "s/^\[$name\] /    /" || true
    done
    done_line=$(grep -E "^VMTEST-DONE " "$log.clean" | head -n 1 || true)
    if [ "$done_line" != "VMTEST-DONE $expected" ]; then
        echo "vm: node $n: expected 'VMTEST-DONE $expected', got '${done_line:-nothing}'"
        failed+=("VMTEST-DONE(node $n)")
    fi
    grep -E "^VMTEST-SETUP-FAILED|^VMINFO node$n (rxe0|net) " "$log.clean" | sed 's/^/vm: /' || true
done
# the full consoles outlive $work in --keep DIR and in Bazel's test.outputs
full=""
if [ -n "$keep" ]; then
    mkdir -p "$keep"
    cp "$initrd" "$keep/"
    for n in $(seq "$nodes"); do
        cp "$work/node$n.log.clean" "$keep/vm-node$n-console.log"
    done
    full=$keep
fi
if [ -n "${TEST_UNDECLARED_OUTPUTS_DIR:-}" ]; then
    for n in $(seq "$nodes"); do
        cp "$work/node$n.log.clean" "$TEST_UNDECLARED_OUTPUTS_DIR/vm-node$n-console.log"
    done
    tb=${TEST_BINARY:-<package>/<test>}
    full="bazel-testlogs/${tb#./}/test.outputs"
fi
if [ ${#failed[@]} -gt 0 ]; then
    for n in $(seq "$nodes"); do
        where="rerun with --keep DIR to keep it"
        [ -z "$full" ] || where="$full/vm-node$n-console.log"
        echo "---- node $n console, last 80 lines (full console: $where) ----"
        tail -n 80 "$work/node$n.log.clean"
    done
    [ $timed_out = 0 ] || failed+=("hard timeout")
    echo "vm: FAIL after $(elapsed)s: ${failed[*]}"
    exit 1
fi
echo "vm: PASS: all ${#case_names[@]} test(s) passed in $(elapsed)s"
