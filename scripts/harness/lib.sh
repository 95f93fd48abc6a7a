# shellcheck shell=bash
# Shared pieces of Ferry's test harness: private D-Bus system buses and avahi-daemons that can
# only reach interfaces the harness created. Sourced by local.sh and hosts.sh.
#
# Safety rules (DEVELOPERS.md): every avahi-daemon runs in a network namespace of ours, with
# allow-interfaces naming only its test interface, deny-interfaces=eth0 and wide-area off, in a
# private mount namespace whose /run is a tmpfs. We stop only the PIDs we started.

HARNESS_PIDFILES=()

log() { printf '[harness %s] %s\n' "$(date +%T.%3N)" "$*" >&2; }

# wait_for FILE REGEX SECONDS -> 0 when a line of FILE matches
wait_for() {
  local end=$(($(date +%s%N) + $3 * 1000000000))
  while (($(date +%s%N) < end)); do
    grep -Eq -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# write_bus_config DIR: a system-bus configuration listening on DIR/bus.sock
write_bus_config() {
  cat >"$1/dbus.conf" <<X
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$1/bus.sock</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/> <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/> <allow receive_sender="*"/>
  </policy>
</busconfig>
X
}

# write_avahi_config DIR HOSTNAME INTERFACE USE_IPV6
write_avahi_config() {
  cat >"$1/avahi.conf" <<X
[server]
host-name=$2
domain-name=local
use-ipv4=yes
use-ipv6=$4
allow-interfaces=$3
deny-interfaces=eth0
ratelimit-interval-usec=1000000
ratelimit-burst=1000
[wide-area]
enable-wide-area=no
[publish]
publish-hinfo=no
publish-workstation=no
[reflector]
enable-reflector=no
[rlimits]
X
}

# start_bus DIR [NETNS]: starts dbus-daemon on DIR/bus.sock, records its PID in DIR/dbus.pid
start_bus() {
  local dir=$1 ns=${2:-}
  write_bus_config "$dir"
  if [ -n "$ns" ]; then
    ip netns exec "$ns" dbus-daemon --config-file="$dir/dbus.conf" --nofork --nopidfile \
      2>"$dir/dbus.log" &
  else
    dbus-daemon --config-file="$dir/dbus.conf" --nofork --nopidfile 2>"$dir/dbus.log" &
  fi
  echo $! >"$dir/dbus.pid"
  HARNESS_PIDFILES+=("$dir/dbus.pid")
  local n
  for n in $(seq 100); do
    [ -S "$dir/bus.sock" ] && return 0
    sleep 0.05
  done
  log "dbus-daemon in $dir did not start"; cat "$dir/dbus.log" >&2
  return 1
}

# start_avahi DIR NETNS: starts avahi-daemon inside NETNS on DIR's bus (config already written);
# records its PID in DIR/avahi.pid and waits for "Server startup complete".
start_avahi() {
  local dir=$1 ns=$2
  : >"$dir/avahi.log"
  DBUS_SYSTEM_BUS_ADDRESS="unix:path=$dir/bus.sock" \
    ip netns exec "$ns" unshare --mount --propagation private \
    sh -c "mount -n -t tmpfs tmpfs /run && exec avahi-daemon -f '$dir/avahi.conf' \
      --no-drop-root --no-chroot --no-rlimits" >>"$dir/avahi.log" 2>&1 &
  echo $! >"$dir/avahi.pid"
  HARNESS_PIDFILES+=("$dir/avahi.pid")
  if ! wait_for "$dir/avahi.log" "Server startup complete" 15; then
    log "avahi-daemon in $ns did not start"; cat "$dir/avahi.log" >&2
    return 1
  fi
}

# write_restart_script DIR NETNS: DIR/restart-avahi [GAP] stops this avahi-daemon (SIGTERM, by
# PID), prints "stopped", waits GAP seconds (default 0) and starts a new one with the same
# configuration, as a package upgrade (or a late start at boot) would.
write_restart_script() {
  local dir=$1 ns=$2
  cat >"$dir/restart-avahi" <<X
#!/bin/bash
set -u
pid=\$(cat '$dir/avahi.pid')
kill "\$pid" 2>/dev/null
for n in \$(seq 100); do kill -0 "\$pid" 2>/dev/null || break; sleep 0.05; done
echo stopped
sleep "\${1:-0}"
: >'$dir/avahi.log'
DBUS_SYSTEM_BUS_ADDRESS='unix:path=$dir/bus.sock' \\
  ip netns exec '$ns' unshare --mount --propagation private \\
  sh -c "mount -n -t tmpfs tmpfs /run && exec avahi-daemon -f '$dir/avahi.conf' --no-drop-root --no-chroot --no-rlimits" >>'$dir/avahi.log' 2>&1 &
echo \$! >'$dir/avahi.pid'
for n in \$(seq 300); do grep -q 'Server startup complete' '$dir/avahi.log' && exit 0; sleep 0.05; done
echo "avahi-daemon did not restart" >&2; exit 1
X
  chmod 755 "$dir/restart-avahi"
}

# write_on_script BASE PREFIX: BASE/on HOST PROG ARGS... runs PROG inside namespace
# PREFIX-HOST with that host's bus (BASE/HOST/bus.sock) as the system bus; exported as
# FERRY_TEST_ON.
write_on_script() {
  local base=$1 prefix=$2
  cat >"$base/on" <<X
#!/bin/sh
h=\$1; shift
DBUS_SYSTEM_BUS_ADDRESS="unix:path=$base/\$h/bus.sock" exec ip netns exec "$prefix-\$h" "\$@"
X
  chmod 755 "$base/on"
  export FERRY_TEST_ON="$base/on"
}

# stop_started: stops every process we started (newest first), by the PIDs we recorded.
stop_started() {
  local i pid
  for ((i = ${#HARNESS_PIDFILES[@]} - 1; i >= 0; i--)); do
    pid=$(cat "${HARNESS_PIDFILES[i]}" 2>/dev/null) || continue
    [ -n "$pid" ] || continue
    kill "$pid" 2>/dev/null
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  HARNESS_PIDFILES=()
}
