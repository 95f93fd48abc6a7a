#!/bin/bash
# hosts.sh CMD [ARGS...] - runs CMD with three simulated hosts a, b, c: network namespaces on a
# private bridge (which lives in a namespace of its own), each with its own D-Bus system bus and
# avahi-daemon restricted to its veth 'mdns0'. Nothing touches eth0 or the root namespace.
#   host a: 10.213.0.1  fd42:f0:7e::1      host b: .2 / ::2      host c: .3 / ::3
# Exported to CMD:
#   FERRY_TEST_ON      a script: "$FERRY_TEST_ON b prog args..." runs prog inside host b's
#                      namespace with host b's bus as DBUS_SYSTEM_BUS_ADDRESS
#   FERRY_TEST_HOSTS   "a=10.213.0.1 b=10.213.0.2 c=10.213.0.3"
# Everything started is torn down when CMD ends (or this script is interrupted).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

P=ferry-$$
HOSTS=(a b c)
SUBNET=10.213.0
SUBNET6=fd42:f0:7e:
BASE=$(mktemp -d /tmp/ferry-hosts.XXXXXX)
chmod 755 "$BASE"

cleanup() {
  stop_started
  for h in "${HOSTS[@]}" br; do ip netns del "$P-$h" 2>/dev/null; done
  rm -rf "$BASE"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$P-br"
ip -n "$P-br" link add br0 type bridge
ip -n "$P-br" link set br0 type bridge mcast_snooping 0
ip -n "$P-br" link set br0 up
i=0
for h in "${HOSTS[@]}"; do
  i=$((i + 1))
  ns="$P-$h"
  ip netns add "$ns"
  # No duplicate address detection: addresses are usable at once, and mDNS over IPv6 starts
  # without the ~1 s DAD delay.
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0
  ip -n "$ns" link set lo up
  ip link add mdns0 netns "$ns" type veth peer name "v$h" netns "$P-br"
  ip -n "$P-br" link set "v$h" master br0 up
  ip -n "$ns" addr add "$SUBNET.$i/24" dev mdns0
  ip -n "$ns" -6 addr add "$SUBNET6:$i/64" dev mdns0 nodad
  ip -n "$ns" link set mdns0 up
  mkdir -m 755 "$BASE/$h"
  start_bus "$BASE/$h" "$ns" || exit 1
  write_avahi_config "$BASE/$h" "host$h" mdns0 yes
done
for h in "${HOSTS[@]}"; do
  start_avahi "$BASE/$h" "$P-$h" || exit 1
done
if grep -l "conflict" "$BASE"/*/avahi.log; then
  log "host name conflict between test hosts"
  exit 1
fi
log "hosts up: ${HOSTS[*]} ($SUBNET.1-${#HOSTS[@]}, ${SUBNET6}:1-${#HOSTS[@]})"

write_on_script "$BASE" "$P"
hosts=""
i=0
for h in "${HOSTS[@]}"; do i=$((i + 1)); hosts="$hosts $h=$SUBNET.$i"; done
export FERRY_TEST_HOSTS="${hosts# }"
"$@"
exit $?
