#!/bin/bash
# local.sh CMD [ARGS...] - runs CMD with, for Ferry's tests:
#   * a private D-Bus system bus + avahi-daemon that reaches only 'lo' of a network namespace of
#     its own (clients in the root namespace still talk to it: the bus is a Unix socket, and
#     resolved addresses are 127.0.0.1);
#   * a second private bus with no avahi-daemon on it, for "discovery unavailable" tests.
# Exported to CMD:
#   DBUS_SYSTEM_BUS_ADDRESS, FERRY_TEST_LOCAL_BUS   the bus with avahi-daemon
#   FERRY_TEST_RESTART_AVAHI                        a script restarting that avahi-daemon
#   FERRY_TEST_NO_DAEMON_BUS                        the bus without avahi-daemon
# Everything started is torn down when CMD ends (or this script is interrupted).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

NS=ferry-local-$$
BASE=$(mktemp -d /tmp/ferry-harness.XXXXXX)
chmod 755 "$BASE"
mkdir -m 755 "$BASE/avahi" "$BASE/nodaemon"

cleanup() {
  stop_started
  ip netns del "$NS" 2>/dev/null
  rm -rf "$BASE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$NS"
ip -n "$NS" link set lo up
start_bus "$BASE/avahi" || exit 1
write_avahi_config "$BASE/avahi" ferry-local lo no
start_avahi "$BASE/avahi" "$NS" || exit 1
write_restart_script "$BASE/avahi" "$NS"
start_bus "$BASE/nodaemon" || exit 1
log "avahi-daemon up in netns $NS (lo only); bus unix:path=$BASE/avahi/bus.sock"

export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$BASE/avahi/bus.sock"
export FERRY_TEST_LOCAL_BUS="$DBUS_SYSTEM_BUS_ADDRESS"
export FERRY_TEST_RESTART_AVAHI="$BASE/avahi/restart-avahi"
export FERRY_TEST_NO_DAEMON_BUS="unix:path=$BASE/nodaemon/bus.sock"
"$@"
exit $?
