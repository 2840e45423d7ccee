#!/bin/bash
# Sourced by the guest checks (guest_checks*.sh) inside the systemd VM: the
# console protocol ("CHECK name: ..." lines, then "RESULT: PASS" or
# "RESULT: FAIL why", and qemu's exit through isa-debug-exit) and small
# readers of rpmad's unit state. The caller sets $check before each check.

finish() { # $1: 0 pass, 1 fail. isa-debug-exit (port 0xf4) ends qemu.
    printf "\\$(printf %03o "$1")" | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
    systemctl poweroff -ff
    exit "$1"
}
fail() {
    echo "CHECK $check: FAIL: $*"
    systemctl status --no-pager rpmad.service
    journalctl -b --no-pager -n 40 -u rpmad.service
    dmesg | tail -n 20
    echo "RESULT: FAIL $check: $*"
    finish 1
}
ok() { echo "CHECK $check: ok${1:+ ($1)}"; }
props() { # "systemctl show" output -> P_<Property> variables
    local k v
    while IFS='=' read -r k v; do printf -v "P_$k" '%s' "$v"; done <<<"$1"
}
show() { props "$(systemctl show -p ActiveState,SubState,MainPID,NRestarts,StatusText rpmad.service)"; }
ms_since() { echo $(((${EPOCHREALTIME/./} - ${1/./}) / 1000)); }
journal() { journalctl -b -u rpmad.service --no-pager -o cat "$@"; }
