#!/bin/bash
# Runs inside the systemd VM (vmtest-runner.service; see run_systemd_vm.sh):
# the life of the rpmad package under a real systemd. One "CHECK name: ..."
# line per check on the console, then "RESULT: PASS" or "RESULT: FAIL why".
# Every program start costs 0.1-0.3 s under TCG: few of them, bash builtins
# otherwise.
exec >/dev/ttyS0 2>&1
. /root/vmtest/env # VERSION, UPGRADE_VERSION
dir=/root/vmtest
control=127.0.0.1:7300

. /root/vmtest/guest_lib.sh # finish, fail, ok, show, ms_since, journal
# What an operator types: rpmactl against the local rpmad. put_data
# replicates 1 MiB of random bytes into region "data"; check_data gets them
# back and compares.
rpmactl() { command rpmactl --server $control "$@"; }
put_data() {
    head -c 1048576 /dev/urandom >"$dir/data.in"
    rpmactl put "$dir/data.in" data --create --size 1MiB 2>&1 &&
        rpmactl get data 1048576 "$dir/data.out" 2>&1 && cmp "$dir/data.in" "$dir/data.out" 2>&1
}
check_data() {
    rm -f "$dir/data.out"
    rpmactl get data 1048576 "$dir/data.out" 2>&1 && cmp "$dir/data.in" "$dir/data.out" 2>&1
}

check=install
t0=$EPOCHREALTIME
out=$(dpkg -i "$dir/rpmad_$VERSION.deb" "$dir/rpmactl_$VERSION.deb" 2>&1) || fail "dpkg -i: $out"
show
# The postinst creates the user, enables and starts the service.
[ "$P_ActiveState/$P_SubState" = active/running ] || fail "after dpkg -i: $P_ActiveState/$P_SubState"
[ "$(systemctl is-enabled rpmad.service)" = enabled ] || fail "not enabled"
ok "dpkg -i took $(ms_since "$t0") ms; rpmad $VERSION active and enabled"

check=start
systemctl stop rpmad.service || fail "systemctl stop rc=$?"
t0=$EPOCHREALTIME
systemctl start rpmad.service || fail "systemctl start rc=$?"
took=$(ms_since "$t0")
show
[ "$P_ActiveState/$P_SubState" = active/running ] || fail "$P_ActiveState/$P_SubState"
[ "$(systemctl is-active rpmad.service)" = active ] || fail "is-active"
[[ "$P_StatusText" == "Serving "* ]] || fail "STATUS= is '$P_StatusText', want Serving ..."
# Type=notify: start returned after READY=1, so the control plane answers now,
# on the first try (rpmactl does not wait for it).
out=$(rpmactl health 2>&1) || fail "health: $out"
out=$(put_data) || fail "put: $out"
ok "start returned in $took ms; status '$P_StatusText'; $out"

check=journal
info=$(journal -p info..info)
[[ "$info" == *"rpmad: ready: control $control"* ]] || fail "no ready line at priority info: $info"
bad=$(journal -p 0..3)
[ -z "$bad" ] || fail "error lines at start: $bad"
ok "ready line at priority info, no errors"

check=reload
sed -i 's/^  level: info$/  level: debug/' /etc/rpmad/rpmad.yaml
systemctl reload rpmad.service || fail "systemctl reload rc=$?"
[[ "$(journal)" == *"rpmad: reloaded: log level debug"* ]] || fail "no reloaded line"
# At debug level rpmad traces control calls: one now appears at priority debug.
check_data >/dev/null || fail "check after reload"
[ -n "$(journal -p debug..debug)" ] || fail "no debug lines after the reload"
ok "log level debug, debug lines in the journal"

check=stop
systemctl stop rpmad.service || fail "systemctl stop rc=$?"
rec=$(</run/rpmad.exit)
[ "$rec" = "SERVICE_RESULT=success EXIT_CODE=exited EXIT_STATUS=0" ] || fail "exit record '$rec'"
[[ "$(journal)" == *"stopping on "* ]] || fail "rpmad did not log that it stops"
[ "$(systemctl is-active rpmad.service)" = inactive ] || fail "still active"
ok "$rec"

check=restart
systemctl start rpmad.service || fail "systemctl start rc=$?"
out=$(check_data) || fail "$out"
ok "$out"

check=hardening
show
pid=$P_MainPID
uid=$(id -u rpmad) || fail "no user rpmad"
read -r _ ruid euid suid fsuid < <(grep '^Uid:' "/proc/$pid/status")
[ "$ruid $euid $suid $fsuid" = "$uid $uid $uid $uid" ] || fail "rpmad runs as uids $ruid $euid $suid $fsuid"
[[ " $(id -Gn rpmad) " == *" rdma "* ]] || fail "rpmad is not in group rdma: $(id -Gn rpmad)"
# In rpmad's mount namespace, as its user: the pool is writable, /etc not.
as_rpmad() { nsenter -t "$pid" -m setpriv --reuid rpmad --regid rpmad --init-groups "$@"; }
as_rpmad touch /var/lib/rpmad/.write-probe || fail "cannot write its ReadWritePaths"
rm -f /var/lib/rpmad/.write-probe
if out=$(as_rpmad touch /etc/rpmad/.write-probe 2>&1); then fail "wrote /etc/rpmad"; fi
[[ "$out" == *"Read-only file system"* ]] || fail "writing /etc/rpmad: $out (want read-only)"
if as_rpmad touch /usr/.write-probe 2>/dev/null; then fail "wrote /usr"; fi
[ "$(stat -c '%a %U' /var/lib/rpmad)" = "700 rpmad" ] || fail "/var/lib/rpmad: $(stat -c '%a %U' /var/lib/rpmad)"
score=$(systemd-analyze security rpmad.service --no-pager 2>&1 | grep -a 'Overall exposure level')
ok "uid $uid, group rdma, only ReadWritePaths writable; ${score#→ }"

check=watchdog
show
old=$P_MainPID restarts=$P_NRestarts
kill -STOP "$old"
t0=$EPOCHREALTIME
# WatchdogSec=3s and TimeoutAbortSec=3s (the test's drop-in): restarted
# within 3 + 3 s plus the restart; 20 s is the bound.
while :; do
    show
    [ "$P_MainPID" != "$old" ] && [ "$P_MainPID" != 0 ] && [ "$P_SubState" = running ] && break
    [ "$(ms_since "$t0")" -lt 20000 ] || fail "not restarted within 20 s: $P_ActiveState/$P_SubState"
    read -r -t 0.2 <> <(:) || true
done
[ "$P_NRestarts" -gt "$restarts" ] || fail "NRestarts $P_NRestarts"
[[ "$(journal)" == *"atchdog timeout"* ]] || [[ "$(journalctl -b --no-pager -o cat -u rpmad.service _PID=1)" == *"atchdog"* ]] ||
    fail "no watchdog timeout in the journal"
out=$(check_data) || fail "$out"
ok "restarted after $(ms_since "$t0") ms (pid $old -> $P_MainPID); $out"

check=upgrade
show
old=$P_MainPID
out=$(dpkg -i "$dir/rpmad_$UPGRADE_VERSION.deb" 2>&1) || fail "dpkg -i: $out"
[ "$(dpkg-query -W -f '${Version}' rpmad)" = "$UPGRADE_VERSION" ] || fail "version $(dpkg-query -W -f '${Version}' rpmad)"
show
[ "$P_ActiveState/$P_SubState" = active/running ] || fail "after upgrade: $P_ActiveState/$P_SubState"
[ "$P_MainPID" != "$old" ] || fail "rpmad was not restarted by the upgrade"
out=$(check_data) || fail "$out"
ok "$VERSION -> $UPGRADE_VERSION, restarted; $out"

check=purge
out=$(dpkg --purge rpmad 2>&1) || fail "dpkg --purge: $out"
[ "$(systemctl is-active rpmad.service)" != active ] || fail "still active"
[ ! -e /var/lib/rpmad ] || fail "/var/lib/rpmad is still there"
[ ! -e /etc/rpmad/rpmad.yaml ] || fail "/etc/rpmad/rpmad.yaml is still there"
[ ! -e /usr/sbin/rpmad ] || fail "/usr/sbin/rpmad is still there"
ok "stopped; binary, configuration and /var/lib/rpmad gone: $out"

echo "RESULT: PASS"
finish 0
