#!/usr/bin/env python3
"""`ferry daemon`'s desktop notifications on a real notification server: Debian's dunst, on a
private D-Bus session bus, under Xvfb (a display on no screen). A sender waiting for a person
raises a notification with Accept and Decline; the action is invoked through dunst itself (its
context menu, whose `dmenu` is a script here that picks the line named in a file); the daemon
answers the sender. A sender whose name belongs to another key here gets no Accept. With no
session bus at all, nothing breaks: the API still asks. Run by Tests/Daemon/run.sh inside
scripts/harness/local.sh.

usage: notify_test.py FERRY_BINARY
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

FERRY = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="ferry-daemon-notify-")
os.chmod(WORK, 0o755)
failures = []
started = []


def check(ok, what):
    what = "daemon notifications: " + what.replace('"', "'")
    print(('\u2714 Test "%s" passed after 0.000 seconds.' if ok
           else '\u2718 Test "%s" failed after 0.000 seconds.') % what, flush=True)
    if not ok:
        failures.append(what)


def spawn(command, **options):
    process = subprocess.Popen(command, **options)
    started.append(process)
    return process


def session_bus():
    """A private session bus: its address."""
    config = os.path.join(WORK, "session.conf")
    with open(config, "w") as f:
        f.write("""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:path=%s/session.sock</listen>
<policy context="default"><allow send_destination="*" eavesdrop="true"/>
<allow eavesdrop="true"/><allow own="*"/></policy></busconfig>""" % WORK)
    spawn(["dbus-daemon", "--config-file=" + config, "--nofork", "--nopidfile"],
          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    path = os.path.join(WORK, "session.sock")
    for _ in range(100):
        if os.path.exists(path):
            break
        time.sleep(0.05)
    return "unix:path=" + path


def free_display():
    for number in range(90, 200):
        if not os.path.exists("/tmp/.X11-unix/X%d" % number) and not os.path.exists("/tmp/.X%d-lock" % number):
            return number
    raise SystemExit("no free X display")


def dunst(bus):
    """Xvfb and dunst, whose context menu's `dmenu` picks the line that contains the text in
    WORK/choice (and keeps what it was shown)."""
    display = free_display()
    spawn(["Xvfb", ":%d" % display, "-screen", "0", "800x600x24", "-nolisten", "tcp"],
          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if os.path.exists("/tmp/.X11-unix/X%d" % display):
            break
        time.sleep(0.05)
    menu = os.path.join(WORK, "dmenu.sh")
    with open(menu, "w") as f:
        f.write('#!/bin/sh\ncat > "%s/menu.txt"\ngrep -m1 -F "$(cat "%s/choice")" "%s/menu.txt"\n'
                % (WORK, WORK, WORK))
    os.chmod(menu, 0o755)
    config = os.path.join(WORK, "dunstrc")
    with open(config, "w") as f:
        f.write("[global]\ndmenu = %s\n" % menu)
    env = dict(os.environ, DISPLAY=":%d" % display, DBUS_SESSION_BUS_ADDRESS=bus)
    spawn(["dunst", "-config", config], env=env, stdout=subprocess.DEVNULL,
          stderr=open(os.path.join(WORK, "dunst.log"), "w"))
    return env


def monitor(bus, name):
    """dbus-monitor of the notification calls and signals, into a file of its own."""
    path = os.path.join(WORK, "monitor-%s.txt" % name)
    spawn(["dbus-monitor", "--address", bus, "interface='org.freedesktop.Notifications'"],
          stdout=open(path, "w"), stderr=subprocess.DEVNULL)
    return path


def daemon(name, bus, notify=True):
    base = tempfile.mkdtemp(prefix="d-", dir=WORK)
    os.chmod(base, 0o755)
    home, runtime, inbox = (os.path.join(base, n) for n in ("home", "run", "in"))
    os.makedirs(runtime)
    os.makedirs(inbox)
    config = os.path.join(base, "config.toml")
    with open(config, "w") as f:
        f.write('[receive]\ndir = "%s"\nname = "%s"\n[daemon]\nnotify = %s\n'
                % (inbox, name, "true" if notify else "false"))
    env = dict(os.environ, FERRY_HOME=home, XDG_RUNTIME_DIR=runtime)
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    if bus:
        env["DBUS_SESSION_BUS_ADDRESS"] = bus
    log = open(os.path.join(base, "daemon.err"), "w")
    process = spawn([FERRY, "daemon", "--config", config], env=env, stdout=subprocess.DEVNULL,
                    stderr=log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if "API at" in open(log.name).read():
            break
        time.sleep(0.1)
    return process, env, inbox, log.name


def send(name, text_name, home):
    path = os.path.join(WORK, text_name)
    with open(path, "w") as f:
        f.write("for %s\n" % name)
    return spawn([FERRY, "send", "--json", "--to", name, "--timeout", "90", path],
                 env=dict(os.environ, FERRY_HOME=os.path.join(WORK, home),
                          XDG_RUNTIME_DIR=os.path.join(WORK, "nowhere")),
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), path


def wait_for(predicate, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    return None


def notify_calls(path):
    """The Notify calls dbus-monitor saw, each as the text dbus-monitor printed of it."""
    calls = []
    for block in open(path).read().split("\nmethod call ")[1:]:
        if "member=Notify" in block.split("\n", 1)[0]:
            calls.append(block.split("\nsignal ")[0])
    return calls


def test_accept_and_decline(bus, env):
    watched = monitor(bus, "answers")
    process, daemon_env, inbox, log = daemon("notified", bus)
    check(process.poll() is None and "desktop notifications on" in open(log).read(),
          "the daemon finds the session bus and says notifications are on")
    for answer in ["Accept", "Decline"]:
        with open(os.path.join(WORK, "choice"), "w") as f:
            f.write(answer)
        before = len(notify_calls(watched))
        sender, path = send("notified", "note-%s.txt" % answer.lower(), "sender-" + answer)
        call = wait_for(lambda: notify_calls(watched)[before:] or None)
        check(call is not None, "a waiting sender raises a notification (%s)" % answer)
        if call is None:
            sender.kill()
            continue
        text = call[0]
        ok = "wants to send" in text and "1 file" in text and "Verification code" in text
        check(ok, "it says who, what, how much and the code" + ("" if ok else ": %r" % text[:400]))
        check('string "accept:' in text and 'string "decline:' in text,
              "with Accept and Decline")
        # dunst's context menu, through its own control tool: the action is the server's.
        subprocess.run(["dunstctl", "context"], env=env, timeout=30)
        try:
            out, err = sender.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            sender.kill()
            out, err = sender.communicate()
        if answer == "Accept":
            check(sender.returncode == 0 and os.path.exists(os.path.join(inbox, os.path.basename(path))),
                  "Accept in the notification lets the sender in: exit 0, the file arrived (%s)" % err[-300:])
        else:
            check(sender.returncode == 4, "Decline in the notification declines it: exit 4 (%s)" % sender.returncode)
        menu = open(os.path.join(WORK, "menu.txt")).read()
        check("Accept" in menu and "Decline" in menu, "dunst's menu showed both actions")
    # A queued send that ends says so too (here: cancelled).
    before = len(notify_calls(watched))
    queued = subprocess.run([FERRY, "send", "--later", "--to", "CD" * 32, path],
                            env=daemon_env, capture_output=True, text=True, timeout=30)
    send_id = queued.stdout.strip()
    subprocess.run([FERRY, "outbox", "cancel", send_id], env=daemon_env, capture_output=True,
                   timeout=30)
    call = wait_for(lambda: notify_calls(watched)[before:] or None)
    check(call is not None and "cancelled" in call[0] and send_id in call[0]
          and 'string "accept:' not in call[0],
          "a queued send that ends raises a notification of its own, with its id")
    process.send_signal(signal.SIGTERM)
    check(process.wait(timeout=30) == 0, "the daemon stops: exit 0")


def test_look_alike_gets_no_accept(bus, env):
    """A sender whose name is trusted here with another key: no one-click Accept."""
    watched = monitor(bus, "look-alike")
    process, daemon_env, inbox, log = daemon("wary", bus)
    # The name "desk" is trusted here with a key that is not the sender's.
    subprocess.run([FERRY, "trust", "AB" * 32, "--name", "desk"], env=daemon_env,
                   capture_output=True, timeout=30)
    before = len(notify_calls(watched))
    sender = spawn([FERRY, "send", "--json", "--to", "wary", "--name", "desk", "--timeout", "30",
                    os.path.join(WORK, "note-accept.txt")],
                   env=dict(os.environ, FERRY_HOME=os.path.join(WORK, "impostor"),
                            XDG_RUNTIME_DIR=os.path.join(WORK, "nowhere")),
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    call = wait_for(lambda: notify_calls(watched)[before:] or None)
    if call is not None:
        text = call[0]
        ok = ('string "accept:' not in text and 'string "decline:' in text
              and "another key" in text)
        check(ok, "KEY CHANGED: Decline only, and the body says why"
              + ("" if ok else ": %r" % text[:400]))
    else:
        check(False, "the look-alike sender raised a notification")
    sender.kill()
    sender.communicate()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


def test_spoofed_action_ignored(bus, env):
    """Another client of the session bus sends ActionInvoked(accept) straight to the daemon's
    connection: it is not the notification server, and is not heard."""
    watched = monitor(bus, "spoof")
    process, daemon_env, inbox, log = daemon("guarded", bus)
    before = len(notify_calls(watched))
    sender, path = send("guarded", "note-spoof.txt", "sender-spoof")
    call = wait_for(lambda: notify_calls(watched)[before:] or None)
    check(call is not None, "the spoof's target notification is shown")
    if call is not None:
        daemon_name = call[0].split("sender=", 1)[1].split(" ", 1)[0]
        # The notification's own Accept key, as the server would send it back.
        key = re.search(r'string "(accept:[0-9a-f]+)"', call[0])
        key = key.group(1) if key else "accept"
        # The notification's id: the server's answer to that Notify.
        text = open(watched).read()
        ids = [line.split("uint32 ")[1] for line in text.splitlines()
               if line.strip().startswith("uint32 ") and "reply_serial" not in line]
        for number in set(ids[-3:] + ["1", "2", "3", "4", "5", "6"]):
            subprocess.run(["dbus-send", "--bus=" + bus, "--type=signal", "--dest=" + daemon_name,
                            "/org/freedesktop/Notifications",
                            "org.freedesktop.Notifications.ActionInvoked",
                            "uint32:" + number.strip(), "string:" + key],
                           capture_output=True, timeout=10)
        time.sleep(3)
        check(sender.poll() is None and not os.path.exists(os.path.join(inbox, "note-spoof.txt")),
              "a forged ActionInvoked from another bus client accepts nothing")
        with open(os.path.join(WORK, "choice"), "w") as f:
            f.write("Decline")
        subprocess.run(["dunstctl", "context"], env=env, timeout=30)
    try:
        sender.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        sender.kill()
        sender.communicate()
    check(sender.returncode == 4, "the server's own Decline still answers it (exit %s)" % sender.returncode)
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


def test_no_session_bus():
    process, env, inbox, log = daemon("busless", None)
    check(process.poll() is None and "desktop notifications on" not in open(log).read(),
          "with no session bus the daemon runs, notifications off")
    sender, path = send("busless", "note-busless.txt", "sender-busless")
    offer = wait_for(lambda: [json.loads(l) for l in subprocess.run(
        [FERRY, "offers", "--json"], env=env, capture_output=True, text=True).stdout.splitlines() if l])
    check(bool(offer), "the question waits in the API all the same")
    if offer:
        subprocess.run([FERRY, "accept", offer[0]["id"]], env=env, capture_output=True, timeout=30)
    sender.communicate(timeout=60)
    check(sender.returncode == 0, "and is accepted through it")
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


def main():
    try:
        bus = session_bus()
        env = dunst(bus)
        time.sleep(1)
        for test in [lambda: test_accept_and_decline(bus, env),
                     lambda: test_look_alike_gets_no_accept(bus, env),
                     lambda: test_spoofed_action_ignored(bus, env), test_no_session_bus]:
            try:
                test()
            except Exception as error:  # noqa: BLE001 - a test that raises is one failure
                check(False, "raised %r" % error)
    finally:
        for process in reversed(started):
            if process.poll() is None:
                process.kill()
                process.wait()
        if not failures:
            shutil.rmtree(WORK, ignore_errors=True)
        else:
            print("left for inspection: " + WORK, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
