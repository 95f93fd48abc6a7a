#!/bin/bash
# routed.sh CMD [ARGS...] - runs CMD with three simulated hosts on two subnets joined by a
# router (issue 41: peers beyond one subnet). Network namespaces only; nothing touches eth0 or
# the root namespace:
#   subnet 1 (a bridge in a namespace of its own): host a 10.215.1.1 fd42:f1:1::1,
#                                                 host b 10.215.1.2 fd42:f1:1::2
#   subnet 2 (a veth pair):                        host c 10.215.2.1 fd42:f1:2::1
#   router r: 10.215.1.254 / fd42:f1:1::fe and 10.215.2.254 / fd42:f1:2::fe, forwarding
#   unicast IPv4 and IPv6, no multicast routing: mDNS and LocalSend announcements stay on
#   their subnet. Each host has its own D-Bus system bus and avahi-daemon restricted to its
#   veth 'mdns0'; the router has none.
#   Host c's resolver (/etc/hosts, through ip netns exec's /etc/netns) knows office.test as
#   host a (IPv4 and IPv6), so that a name is resolved by the system resolver; its DNS server
#   is the router (10.215.2.254, where a test may start dnsmasq), and its avahi-daemon has
#   wide-area lookups on, for unicast DNS-SD there: the only DNS server it can reach is the
#   test's own.
# Exported to CMD:
#   FERRY_TEST_ON      "$FERRY_TEST_ON c prog args..." runs prog inside host c's namespace
#   FERRY_TEST_HOSTS   "a=10.215.1.1 b=10.215.1.2 c=10.215.2.1"
#   FERRY_TEST_ROUTER  the router's namespace (a test starts its DNS server there)
# Everything started is torn down when CMD ends (or this script is interrupted).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

P=ferry-$$
HOSTS=(a b c)
BASE=$(mktemp -d /tmp/ferry-routed.XXXXXX)
made_netns=
[ -d /etc/netns ] || made_netns=1
chmod 755 "$BASE"

cleanup() {
  stop_started
  for h in "${HOSTS[@]}" br r; do ip netns del "$P-$h" 2>/dev/null; done
  rm -rf "/etc/netns/$P-c" "$BASE"
  [ -n "$made_netns" ] && rmdir /etc/netns 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

quiet_ns() {
  ip netns add "$1"
  # No duplicate address detection: addresses are usable at once.
  ip netns exec "$1" sysctl -qw net.ipv6.conf.default.accept_dad=0 net.ipv6.conf.all.accept_dad=0
  ip -n "$1" link set lo up
}

quiet_ns "$P-r"
ip netns exec "$P-r" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
ip netns add "$P-br"
ip -n "$P-br" link add br0 type bridge
ip -n "$P-br" link set br0 type bridge mcast_snooping 0
ip -n "$P-br" link set br0 up
# Router leg on subnet 1 (on the bridge) and on subnet 2 (a veth pair to host c).
ip link add r1 netns "$P-r" type veth peer name vr netns "$P-br"
ip -n "$P-br" link set vr master br0 up
ip -n "$P-r" addr add 10.215.1.254/24 dev r1
ip -n "$P-r" -6 addr add fd42:f1:1::fe/64 dev r1 nodad
ip -n "$P-r" link set r1 up

declare -A ADDR4=([a]=10.215.1.1 [b]=10.215.1.2 [c]=10.215.2.1)
declare -A ADDR6=([a]=fd42:f1:1::1 [b]=fd42:f1:1::2 [c]=fd42:f1:2::1)
for h in "${HOSTS[@]}"; do
  ns="$P-$h"
  quiet_ns "$ns"
  if [ "$h" = c ]; then
    ip link add mdns0 netns "$ns" type veth peer name r2 netns "$P-r"
    ip -n "$P-r" addr add 10.215.2.254/24 dev r2
    ip -n "$P-r" -6 addr add fd42:f1:2::fe/64 dev r2 nodad
    ip -n "$P-r" link set r2 up
    gw4=10.215.2.254 gw6=fd42:f1:2::fe
  else
    ip link add mdns0 netns "$ns" type veth peer name "v$h" netns "$P-br"
    ip -n "$P-br" link set "v$h" master br0 up
    gw4=10.215.1.254 gw6=fd42:f1:1::fe
  fi
  ip -n "$ns" addr add "${ADDR4[$h]}/24" dev mdns0
  ip -n "$ns" -6 addr add "${ADDR6[$h]}/64" dev mdns0 nodad
  ip -n "$ns" link set mdns0 up
  ip -n "$ns" route add default via "$gw4"
  ip -n "$ns" -6 route add default via "$gw6"
  mkdir -m 755 "$BASE/$h"
  start_bus "$BASE/$h" "$ns" || exit 1
  write_avahi_config "$BASE/$h" "routed$h" mdns0 yes
done
sed -i 's/^enable-wide-area=no$/enable-wide-area=yes/' "$BASE/c/avahi.conf"
if ! mkdir -p "/etc/netns/$P-c" || ! printf '127.0.0.1 localhost\n::1 localhost\n%s office.test\n%s office.test\n' \
  "${ADDR4[a]}" "${ADDR6[a]}" >"/etc/netns/$P-c/hosts" \
  || ! echo "nameserver 10.215.2.254" >"/etc/netns/$P-c/resolv.conf"; then
  log "cannot write host c's /etc/hosts (/etc/netns/$P-c)"
  exit 1
fi
for h in "${HOSTS[@]}"; do
  start_avahi "$BASE/$h" "$P-$h" || exit 1
done
log "routed hosts up: a ${ADDR4[a]}, b ${ADDR4[b]} | router | c ${ADDR4[c]}"

write_on_script "$BASE" "$P"
export FERRY_TEST_HOSTS="a=${ADDR4[a]} b=${ADDR4[b]} c=${ADDR4[c]}"
export FERRY_TEST_ROUTER="$P-r"
"$@"
exit $?
