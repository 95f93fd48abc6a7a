#!/bin/bash
# Tests/Web/run.sh FERRY_BINARY SCREENSHOT_DIR - runs browser_test.py in a network namespace of
# its own that has only loopback (the browser can reach nothing but the receiver on
# 127.0.0.1), then the hostile HTTP clients of Tests/Hostile/web_hostile.py, then deletes the
# namespace. Debian's own python3, which has python3-selenium.
set -u
ns=ferry-web-$$
ip netns add "$ns" || exit 1
trap 'ip netns del "$ns" 2>/dev/null' EXIT
ip -n "$ns" link set lo up
ip netns exec "$ns" /usr/bin/python3 "$(dirname "$0")/browser_test.py" "$1" "$2"
browser=$?
# Hostile HTTP clients against the same page's server (Tests/Hostile).
ip netns exec "$ns" /usr/bin/python3 "$(dirname "$0")/../Hostile/web_hostile.py" "$1"
hostile=$?
[ "$browser" = 0 ] && [ "$hostile" = 0 ]
