#!/bin/bash
# Tests/Daemon/run.sh FERRY_BINARY - `ferry daemon`'s API tests (api_test.py) and its desktop
# notifications (notify_test.py), inside scripts/harness/local.sh (a private avahi-daemon on
# loopback), with what scripts/setup installed from Tests/Daemon/requirements.txt.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export PYTHONPATH="$root/.build-pypi-daemon"
status=0
/usr/bin/python3 "$here/api_test.py" "$1" || status=1
/usr/bin/python3 "$here/notify_test.py" "$1" || status=1
exit $status
