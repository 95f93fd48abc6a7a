#!/usr/bin/env python3
"""leftovers.py RUN_ID ROOT_PID [--kill]

Lists the processes a test run left behind: those whose environment carries
FERRY_TEST_RUN=RUN_ID (every process scripts/test starts inherits it; nothing else on the
machine has it, so a ferry the user runs elsewhere is never touched) and that are not
descendants of ROOT_PID (scripts/test itself: what still runs under it is its own, not left
over). With --kill, each is killed by its PID. Exit status 1 when any was found, else 0.

Standard library only; reads /proc.
"""
import os
import signal
import sys


def stat_fields(pid):
    """(ppid, command) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    close = data.rfind(")")
    fields = data[close + 2:].split()
    return int(fields[1]), fields[0]


def environment(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def command_line(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().split(b"\0")
    except OSError:
        return "?"
    return " ".join(w.decode("utf-8", "replace") for w in words if w)[:300]


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    run_id, root = sys.argv[1], int(sys.argv[2])
    kill = "--kill" in sys.argv[3:]
    marker = f"FERRY_TEST_RUN={run_id}".encode()
    me = os.getpid()
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = stat_fields(int(entry))
            if fields:
                parents[int(entry)] = fields[0]

    def descends_from_root(pid):
        seen = 0
        while pid > 1 and seen < 4096:
            if pid == root:
                return True
            pid = parents.get(pid, 0)
            seen += 1
        return False

    found = []
    for pid in sorted(parents):
        if pid == me or descends_from_root(pid):
            continue
        if marker in environment(pid):
            found.append(pid)
    for pid in found:
        print(f"  left running: pid {pid}: {command_line(pid)}")
        if kill:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
