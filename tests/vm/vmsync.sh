#!/bin/sh
# vmsync (/usr/bin/vmsync in the VM): starts a client only once its server
# listens. A client whose server does not listen yet gets REJECTED, and
# programs that do not retry (rpma's examples) would then fail at random.
#
#   vmsync server PORT CMD [ARG...]
#       runs CMD; once an rdma_cm ID of this VM is in LISTEN state on PORT
#       (`rdma res show cm_id`), answers TCP connections on PORT+10000 until
#       CMD exits; exits with CMD's status
#   vmsync client ADDR PORT [CMD [ARG...]]
#       waits until ADDR answers on TCP PORT+10000, then runs CMD (without
#       CMD it only waits: `vmsync client ADDR PORT && { any command line; }`)
#
# VMSYNC_TIMEOUT (seconds, default 60) bounds the wait; when it runs out,
# vmsync exits with status 1.
timeout=${VMSYNC_TIMEOUT:-60}
now() { cut -d. -f1 /proc/uptime; }
deadline=$(($(now) + timeout))

case "$1" in
server)
    port=$2
    shift 2
    "$@" &
    pid=$!
    until rdma res show cm_id 2>/dev/null | grep -qE "state LISTEN .*src-addr [^ ]*:$port( |$)"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            wait "$pid"
            exit $?
        fi
        if [ "$(now)" -ge "$deadline" ]; then
            echo "vmsync: nothing listens on port $port after ${timeout}s" >&2
            kill "$pid"
            exit 1
        fi
        sleep 0.1
    done
    nc -ll -p $((port + 10000)) -e /bin/true &
    nc_pid=$!
    wait "$pid"
    rc=$?
    kill "$nc_pid" 2>/dev/null
    exit $rc
    ;;
client)
    addr=$2 port=$3
    shift 3
    until nc -w 1 "$addr" $((port + 10000)) </dev/null >/dev/null 2>&1; do
        if [ "$(now)" -ge "$deadline" ]; then
            echo "vmsync: no server listening on $addr port $port after ${timeout}s" >&2
            exit 1
        fi
        sleep 0.2
    done
    exec "$@"
    ;;
*)
    echo "usage: vmsync server PORT CMD... | vmsync client ADDR PORT CMD..." >&2
    exit 2
    ;;
esac
