#!/usr/bin/env bash
# rpmad.service is a valid unit that says what rpmad needs:
#   1. the lines operators and rpmad rely on are there, spelled exactly;
#   2. `systemd-analyze verify` is silent on it, with ExecStart pointing at the
#      rpmad just built and the manual pages of Documentation= on MANPATH
#      (verify runs `man` on them and checks every Exec binary exists);
#   3. the same check rejects the unit with one key misspelt (verify exits 0
#      on an unknown key and only prints it, so silence is the criterion);
#   4. the pool directory rpmad picks as the unit's User= is the unit's
#      StateDirectory;
#   5. `systemd-analyze security --offline=yes` rates its exposure.
# Nothing is filtered from verify's output: systemd 252 prints nothing about
# a good unit, also in a container where systemd is not running, so any line
# is a finding.
#
#   verify_unit_test.sh UNIT RPMAD RPMAD_8 RPMAD_YAML_5
set -euo pipefail

unit=$1
rpmad=$(realpath "$2")
man8=$3
man5=$4
work=${TEST_TMPDIR:-$(mktemp -d)}
status=0
fail() {
    echo "FAIL: $*"
    status=1
}

# --- 1. the lines that matter ------------------------------------------------
# shellcheck disable=SC2016 # $MAINPID is systemd's, not the shell's
for line in \
    'Type=notify' \
    'NotifyAccess=main' \
    'ExecStart=/usr/sbin/rpmad --config /etc/rpmad/rpmad.yaml' \
    'ExecReload=/bin/kill -HUP $MAINPID' \
    'WatchdogSec=30s' \
    'Restart=on-failure' \
    'LimitMEMLOCK=infinity' \
    'User=rpmad' \
    'StateDirectory=rpmad' \
    'StateDirectoryMode=0700' \
    'ReadWritePaths=/var/lib/rpmad' \
    'ProtectSystem=strict' \
    'ProtectHome=yes' \
    'PrivateTmp=yes' \
    'NoNewPrivileges=yes' \
    'DevicePolicy=closed' \
    'CapabilityBoundingSet=CAP_IPC_LOCK' \
    'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK AF_IB' \
    'Documentation=man:rpmad(8) man:rpmad.yaml(5)' \
    'WantedBy=multi-user.target'; do
    grep -qxF -- "$line" "$unit" || fail "$unit lacks the line: $line"
done
# PrivateDevices=yes would hide /dev/infiniband from the verbs provider.
if grep -q '^PrivateDevices=\(yes\|true\|on\|1\)' "$unit"; then
    fail "$unit sets PrivateDevices=, which hides /dev/infiniband"
fi

# --- 2. and 3. systemd-analyze verify ----------------------------------------
mkdir -p "$work/man/man8" "$work/man/man5" "$work/good" "$work/typo"
cp "$man8" "$work/man/man8/rpmad.8"
cp "$man5" "$work/man/man5/rpmad.yaml.5"
export MANPATH=$work/man

sed "s|^ExecStart=/usr/sbin/rpmad |ExecStart=$rpmad |" "$unit" >"$work/good/rpmad.service"
grep -qF "ExecStart=$rpmad " "$work/good/rpmad.service" ||
    fail "could not point ExecStart at the built rpmad"
sed 's|^Type=notify$|Typo=notify|' "$work/good/rpmad.service" >"$work/typo/rpmad.service"
grep -qx 'Typo=notify' "$work/typo/rpmad.service" || fail "could not plant the typo"

# Succeeds when verify exits 0 and prints nothing; shows what it printed.
verify_is_clean() {
    local output rc=0
    output=$(systemd-analyze verify "$1" 2>&1) || rc=$?
    [ -n "$output" ] && printf '%s\n' "$output" | sed 's/^/    verify: /'
    [ "$rc" -eq 0 ] && [ -z "$output" ]
}

echo "== systemd-analyze verify rpmad.service (ExecStart=$rpmad)"
verify_is_clean "$work/good/rpmad.service" || fail "systemd-analyze verify complains (above)"
echo "== systemd-analyze verify rpmad.service with Type= misspelt as Typo="
if verify_is_clean "$work/typo/rpmad.service"; then
    fail "systemd-analyze verify accepts a misspelt key: the check above proves nothing"
fi

# --- 4. the pool directory of the service's user -----------------------------
# rpmad defaults to /var/lib/rpmad only as root; as User=rpmad it follows
# $XDG_DATA_HOME, which the unit sets. Run rpmad's --help as an unprivileged
# user with the unit's environment and read the default it reports. As root,
# setpriv drops to nobody, keeping only the right to reach the binary under
# Bazel's output tree (/root is 0700).
state_dir=/var/lib/$(sed -n 's/^StateDirectory=//p' "$unit")
unit_env=$(sed -n 's/^Environment=//p' "$unit")
as_user=()
if [ "$(id -u)" -eq 0 ]; then
    as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups
        --inh-caps=+dac_read_search --ambient-caps=+dac_read_search)
fi
# shellcheck disable=SC2086 # the unit's Environment= is a list of words
help=$(env -i PATH=/usr/bin:/bin HOME=/nonexistent $unit_env "${as_user[@]}" "$rpmad" --help |
    tr -s ' \n' '  ') || true
case $help in
*"Default for this user: $state_dir."*)
    echo "== as User=, rpmad's default pool directory is $state_dir, the StateDirectory" ;;
*) fail "run as the service user with Environment=$unit_env, rpmad's default pool" \
    "directory is not $state_dir: $(grep -o 'Default for this user: [^ ]*' <<<"$help")" ;;
esac

# --- 5. exposure ---------------------------------------------------------------
analyze_help=$(systemd-analyze --help 2>/dev/null || true)
if grep -q -- '--offline' <<<"$analyze_help"; then
    security=$(systemd-analyze security --offline=yes "$work/good/rpmad.service" 2>&1) ||
        true
    printf '%s\n' "$security" | grep -v '^✓' | sed 's/^/    /'
    exposure=$(sed -n 's/.*Overall exposure level for rpmad.service: \([0-9.]*\).*/\1/p' \
        <<<"$security")
    echo "== exposure: ${exposure:-unknown}"
    # Offline, the score depends only on the unit's text and systemd's
    # version; 1.9 on Debian 12's systemd 252. Dropping a few hardening lines
    # crosses the ceiling.
    if [ -z "$exposure" ] || awk -v e="$exposure" 'BEGIN { exit !(e > 2.5) }'; then
        fail "exposure ${exposure:-not reported} is above 2.5: hardening was lost"
    fi
else
    echo "== this systemd-analyze has no --offline: exposure not rated"
fi

[ "$status" -eq 0 ] && echo "PASS"
exit "$status"
