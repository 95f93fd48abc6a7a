#!/bin/bash
# Tests/UI/run.sh FERRY_BINARY SCREENSHOT_DIR - the daemon's web page in real browsers,
# Chromium and Firefox ESR (ui_test.py) and the page's script's unit tests (format_test.js, under node), in a network
# namespace of its own that has only loopback: the browser reaches nothing but the daemon and
# the test's peers on 127.0.0.1. Run inside scripts/harness/local.sh (its private avahi-daemon
# is reached over its D-Bus socket, so peers are found by mDNS). Debian's own python3, which
# has python3-selenium; axe-core and the Marionette client from .build-pypi-ui (scripts/setup).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
status=0
NODE_PATH=/usr/share/nodejs node "$here/format_test.js" || status=1
ns=ferry-ui-$$
ip netns add "$ns" || exit 1
trap 'ip netns del "$ns" 2>/dev/null' EXIT
ip -n "$ns" link set lo up
PYTHONPATH="$root/.build-pypi-ui" ip netns exec "$ns" /usr/bin/python3 "$here/ui_test.py" "$1" "$2" || status=1
exit $status
