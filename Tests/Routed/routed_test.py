#!/usr/bin/env python3
"""Peers beyond one subnet (issue 41), on scripts/harness/routed.sh's topology: hosts a and b on
one subnet, host c on another behind a router that forwards unicast and no multicast, each host
with its own avahi-daemon. Real `ferry` processes in the hosts' namespaces, files on disk.

  - discovery alone does not cross the router (the topology is what it says);
  - a receiver met once on its subnet is reached from the other subnet by its name, at the
    address remembered, and a receiver restarted without --port listens on its last port;
  - a remembered address another Ferry holds now: refused in the TLS handshake (exit 5),
    nothing sent there, the address forgotten and said;
  - a named address by host name (the system resolver: /etc/hosts of host c) without a
    fingerprint: a first contact whose key is then the name's, and another key there refused;
  - a named IPv6 address with a fingerprint; the wrong fingerprint refused;
  - ferry doctor says when a remembered peer answers but mDNS does not find it, and ferry
    browse lists it with where it was found;
  - unicast DNS-SD: the receiver registered in a real DNS server (dnsmasq at the router) is
    found by ferry browse --domain and sent to by ferry send --domain;
  - the daemon's outbox delivering across the router, at the remembered address;
  - LocalSend across the router: the independent LocalSend peer on host a, found from host c
    by the config's localsend_scan (and not without it), and sent to.

usage: routed_test.py FERRY_BINARY   (inside scripts/harness/routed.sh)
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

FERRY = sys.argv[1]
ON = os.environ["FERRY_TEST_ON"]
HOSTS = dict(pair.split("=") for pair in os.environ["FERRY_TEST_HOSTS"].split())
WORK = tempfile.mkdtemp(prefix="ferry-routed-")
os.chmod(WORK, 0o755)
failures = []
started = []


def check(ok, what, detail=""):
    """One expectation, reported as scripts/test counts Swift Testing's."""
    what = "routed: " + what.replace('"', "'")
    print(('\u2714 Test "%s" passed after 0.000 seconds.' if ok
           else '\u2718 Test "%s" failed after 0.000 seconds.') % what, flush=True)
    if not ok:
        print("    " + str(detail)[-3000:], flush=True)
        failures.append(what)


def home(name):
    path = os.path.join(WORK, name)
    os.makedirs(path, exist_ok=True)
    return path


def environment(ferry_home):
    """A home of its own, and its config.toml (if any) as the only config."""
    env = dict(os.environ, FERRY_HOME=ferry_home, NO_COLOR="1")
    env.pop("FERRY_CONFIG", None)
    return env


def ferry(host, ferry_home, *args, timeout=60):
    """Runs `ferry ARGS` on `host`; (exit status, NDJSON events, stderr)."""
    done = subprocess.run(
        [ON, host, FERRY, *args], env=environment(ferry_home), capture_output=True,
        text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    events = []
    for line in done.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    return done.returncode, events, done.stderr


def end(process, signum=signal.SIGTERM, grace=10):
    """Ends `process` (one this test started) with `signum`, and kills it if it is still
    running `grace` seconds later."""
    if process.poll() is None:
        process.send_signal(signum)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Receiver:
    """`ferry receive --yes --json` on a host, with a home and folder of its own; its events are
    read as they come (a thread drains its stdout, so that it never blocks on a full pipe)."""

    def __init__(self, host, ferry_home, name, port=None):
        self.dir = tempfile.mkdtemp(prefix="in-", dir=WORK)
        os.chmod(self.dir, 0o755)
        args = [ON, host, FERRY, "receive", "--yes", "--json", "--dir", self.dir, "--name", name]
        if port:
            args += ["--port", str(port)]
        self.log = open(os.path.join(WORK, "receiver-%d.log" % len(started)), "w+")
        self.process = subprocess.Popen(
            args, env=environment(ferry_home), stdout=subprocess.PIPE, stderr=self.log,
            text=True, stdin=subprocess.DEVNULL)
        started.append(self)
        self.port = None
        advertising = threading.Event()

        def drain():
            for line in self.process.stdout:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("event") == "advertising" and self.port is None:
                    self.port = event["port"]
                    advertising.set()

        threading.Thread(target=drain, daemon=True).start()
        if not advertising.wait(60):
            self.stop()
            self.log.seek(0)
            raise RuntimeError("receiver did not start: " + self.log.read())

    def stop(self):
        end(self.process, signal.SIGINT)

    def holds(self, name):
        return os.path.exists(os.path.join(self.dir, name))


def fingerprint_of(ferry_home):
    _, events, _ = ferry("a", ferry_home, "identity", "--json")
    return events[0]["fingerprint"]


def peers(ferry_home):
    _, events, _ = ferry("c", ferry_home, "peers", "--json")
    return events


def payload(name, size=200_000):
    path = os.path.join(WORK, name)
    with open(path, "wb") as out:
        out.write(os.urandom(size))
    return path


def main():
    desk_home, laptop_home = home("desk"), home("laptop")
    desk_key = fingerprint_of(desk_home)
    desk = Receiver("a", desk_home, "desk a")

    # Discovery alone: the router passes no mDNS.
    status, _, err = ferry(
        "c", laptop_home, "send", "--to", "desk a", "--timeout", "6", "--json",
        payload("unseen.bin"))
    check(status == 3 and not desk.holds("unseen.bin"),
          "a receiver on the other subnet is not found by discovery alone (exit 3)", err)

    # Met once on its own subnet: remembered with the address it was reached at.
    status, _, err = ferry("b", laptop_home, "send", "--to", "desk a", "--json",
                           payload("first.bin"))
    check(status == 0 and desk.holds("first.bin"), "sent to on its own subnet", err)
    known = [e for e in peers(laptop_home) if e["event"] == "peer"]
    address = "%s:%d" % (HOSTS["a"], desk.port)
    check(len(known) == 1 and known[0]["fingerprint"] == desk_key
          and address in known[0]["addresses"] and known[0]["reached_at"],
          "ferry peers lists the address it was reached at", known)

    # The laptop moves to the other subnet: found by its name at the remembered address.
    started_at = time.monotonic()
    status, events, err = ferry("c", laptop_home, "send", "--to", "desk a", "--json",
                                payload("across.bin"))
    took = time.monotonic() - started_at
    accepted = [e for e in events if e["event"] == "accepted"]
    check(status == 0 and desk.holds("across.bin") and accepted
          and accepted[0]["fingerprint"] == desk_key and "reached before" in err,
          "across the router by name, at the remembered address, said so (%.1f s)" % took, err)

    # ferry doctor on the far subnet: the peer answers where it was reached, mDNS misses it.
    _, events, err = ferry("c", laptop_home, "doctor", "--json", "--dir", WORK)
    multicast = [e for e in events if e.get("event") == "check" and e["name"] == "multicast"]
    check(len(multicast) == 1 and multicast[0]["status"] == "warning"
          and "desk a" in multicast[0]["message"] and "multicast" in multicast[0]["message"],
          "ferry doctor says the network does not pass multicast, naming the peer", events)
    _, events, err = ferry("b", laptop_home, "doctor", "--json", "--dir", WORK)
    multicast = [e for e in events if e.get("event") == "check" and e["name"] == "multicast"]
    check(len(multicast) == 1 and multicast[0]["status"] == "ok",
          "ferry doctor on the peer's own subnet: found by mDNS too, ok", events)

    # ferry browse on the far subnet lists it, as remembered.
    status, events, err = ferry("c", laptop_home, "browse", "--timeout", "7", "--json")
    listed = [e for e in events if e.get("event") == "peer-remembered"]
    check(status == 0 and len(listed) == 1 and listed[0]["fingerprint"] == desk_key
          and listed[0]["source"] == "remembered" and listed[0]["address"] == address,
          "ferry browse across the router lists the peer where it was last reached", events)

    # Restarted without --port: the same port, so the remembered address still works.
    old_port = desk.port
    desk.stop()
    desk = Receiver("a", desk_home, "desk a")
    check(desk.port == old_port, "a receiver restarted without --port listens on its last port",
          (old_port, desk.port))
    status, _, err = ferry("c", laptop_home, "send", "--to", "desk a", "--json",
                           payload("restarted.bin"))
    check(status == 0 and desk.holds("restarted.bin"),
          "reached across the router after its restart", err)

    # Another Ferry at the remembered address (same name, another key): refused, forgotten.
    desk.stop()
    impostor = Receiver("a", home("impostor"), "desk a", port=old_port)
    status, _, err = ferry("c", laptop_home, "send", "--to", "desk a", "--timeout", "10",
                           "--json", payload("stolen.bin"))
    check(status == 5 and not os.listdir(impostor.dir) and "That address is forgotten" in err,
          "another key at a remembered address: exit 5, nothing sent, said", err)
    known = [e for e in peers(laptop_home) if e["event"] == "peer"]
    check(known and address not in known[0]["addresses"],
          "the address another key answers at is forgotten", known)
    impostor.stop()

    # A named address by host name, no fingerprint: a first contact, then the name's key.
    desk = Receiver("a", desk_home, "desk a", port=old_port)
    named_home = home("named")
    status, _, err = ferry("c", named_home, "peers", "add", "office", "office.test:%d" % old_port)
    check(status == 0, "ferry peers add names a host name's address", err)
    status, _, err = ferry("c", named_home, "send", "--to", "Office", "--json",
                           payload("named.bin"))
    check(status == 0 and desk.holds("named.bin"),
          "sent by a named host name across the router (the system resolver)", err)
    named = [e for e in peers(named_home) if e["event"] == "named-address"]
    check(len(named) == 1 and named[0]["fingerprint"] == desk_key,
          "the first contact's key is the name's", named)
    desk.stop()
    impostor = Receiver("a", home("impostor"), "desk a", port=old_port)
    status, _, err = ferry("c", named_home, "send", "--to", "office", "--timeout", "10",
                           "--json", payload("named-stolen.bin"))
    check(status == 5 and not os.listdir(impostor.dir),
          "another key at a named address whose key was learnt: exit 5, nothing sent", err)
    impostor.stop()

    # A named IPv6 address with a fingerprint, and one with the wrong fingerprint.
    desk = Receiver("a", desk_home, "desk a", port=old_port)
    added, _, err = ferry("c", named_home, "peers", "add", "desk6",
                          "[fd42:f1:1::1]:%d" % old_port, "--fingerprint", desk_key)
    status, _, err = ferry("c", named_home, "send", "--to", "desk6", "--json",
                           payload("six.bin"))
    check(added == 0 and status == 0 and desk.holds("six.bin"),
          "a named IPv6 address with its fingerprint", err)
    wrong = fingerprint_of(home("other"))
    added, _, err = ferry("c", named_home, "peers", "add", "desk6",
                          "[fd42:f1:1::1]:%d" % old_port, "--fingerprint", wrong)
    check(added == 0, "a named address given another key", err)
    status, _, err = ferry("c", named_home, "send", "--to", "desk6", "--timeout", "10",
                           "--json", payload("six-wrong.bin"))
    check(status == 5 and not desk.holds("six-wrong.bin"),
          "a named address whose receiver lacks the named key: exit 5, nothing sent", err)

    # A named address whose name is a trusted peer's is held to that peer's key.
    other_key = fingerprint_of(home("trusted-other"))
    ferry("c", named_home, "trust", other_key, "--name", "pinned")
    added, _, err = ferry("c", named_home, "peers", "add", "pinned",
                          "office.test:%d" % old_port)
    status, _, err = ferry("c", named_home, "send", "--to", "pinned", "--timeout", "10",
                           payload("pinned.bin"))
    check(added == 0 and status == 5 and not desk.holds("pinned.bin"),
          "a named address under a trusted peer's name takes that key: another refused", err)
    short, _, err = ferry("c", named_home, "peers", "add", "shorty", "office.test:1",
                          "--fingerprint", desk_key[:8])
    check(short == 2 and "16" in err, "a named key of fewer than 16 digits: exit 2", err)

    # Unicast DNS-SD: what desk advertises by mDNS, registered by an administrator in
    # example.test on a real DNS server (dnsmasq) at the router; host c browses it.
    unicast_dns_sd(desk, desk_key)
    outbox_across(desk, desk_key)
    desk.stop()
    localsend_scan()


def outbox_across(desk, desk_key):
    """ferry daemon on host c, whose home met desk on subnet 1: a send queued for desk is
    delivered across the router, at the address remembered."""
    outbox_home = home("outbox")
    status, _, err = ferry("b", outbox_home, "send", "--to", "desk a", payload("met.bin"))
    check(status == 0, "the daemon's machine meets desk on its subnet first", err)
    runtime = tempfile.mkdtemp(prefix="run-", dir=WORK)
    inbox = tempfile.mkdtemp(prefix="daemon-in-", dir=WORK)
    config = os.path.join(outbox_home, "config.toml")
    with open(config, "w") as out:
        out.write('[receive]\ndir = "%s"\nname = "laptop daemon"\n[daemon]\nnotify = false\n'
                  % inbox)
    env = dict(environment(outbox_home), XDG_RUNTIME_DIR=runtime)
    log = open(os.path.join(WORK, "daemon.log"), "w")
    daemon = subprocess.Popen([ON, "c", FERRY, "daemon", "--config", config], env=env,
                              stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)
    try:
        socket_path = os.path.join(runtime, "ferry", "api.sock")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not os.path.exists(socket_path):
            time.sleep(0.1)
        queued = subprocess.run(
            [ON, "c", FERRY, "send", "--later", "--to", desk_key[:16], payload("later.bin")],
            env=env, capture_output=True, text=True, timeout=60)
        check(queued.returncode == 0, "ferry send --later queues a send for desk",
              queued.stderr)
        # The courier tries remembered addresses 5 s after its start, then every 30 s.
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not desk.holds("later.bin"):
            time.sleep(0.5)
        listed = subprocess.run([ON, "c", FERRY, "outbox", "--json"], env=env,
                                capture_output=True, text=True, timeout=60).stdout
        check(desk.holds("later.bin") and '"delivered"' in listed,
              "the daemon's outbox delivers across the router, at the remembered address",
              listed + open(log.name).read()[-2000:])
    finally:
        end(daemon, grace=20)


def localsend_scan():
    """The independent LocalSend peer (Tests/LocalSend) on host a; host c's ferry, whose config
    scans subnet 1, finds it there and sends to it; without the scan it is not found."""
    peer_dir = tempfile.mkdtemp(prefix="ls-in-", dir=WORK)
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "LocalSend", "localsend_peer.py")
    log = open(os.path.join(WORK, "localsend-peer.log"), "w+")
    peer = subprocess.Popen(
        [ON, "a", "python3", script, "receive", "--home", home("ls-peer"), "--alias",
         "scan phone", "--interface", "mdns0", "--dir", peer_dir],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and '"listening"' not in open(log.name).read():
            time.sleep(0.1)
        check('"listening"' in open(log.name).read(), "the independent LocalSend peer listens",
              open(log.name).read())
        scanning = home("ls-scanning")
        config = os.path.join(scanning, "config.toml")
        with open(config, "w") as out:
            out.write('[discovery]\nlocalsend_scan = ["10.215.1.0/24"]\n')
        status, events, err = ferry("c", home("ls-plain"), "browse", "--localsend",
                                    "--timeout", "5", "--json")
        plain = [e for e in events if e.get("protocol") == "localsend"]
        check(not plain, "LocalSend's multicast does not cross the router: not found", events)
        status, events, err = ferry("c", scanning, "browse", "--localsend", "--timeout", "8",
                                    "--json")
        found = [e for e in events if e.get("protocol") == "localsend"
                 and e.get("peer") == "scan phone"]
        check(status == 0 and len(found) == 1 and found[0]["source"] == "scan"
              and found[0]["address"].startswith(HOSTS["a"] + ":"),
              "browse --localsend finds the device on the other subnet by the config's scan",
              (events, err))
        status, _, err = ferry("c", scanning, "send", "--localsend", "--to", "scan phone",
                               "--timeout", "20", payload("phone.bin"))
        check(status == 0 and os.path.exists(os.path.join(peer_dir, "phone.bin")),
              "send --localsend reaches it across the router, found by the scan", err)
    finally:
        end(peer)


def unicast_dns_sd(desk, desk_key):
    browsed = subprocess.run(
        [ON, "a", "avahi-browse", "-r", "-p", "-t", "_ferry._tcp"], capture_output=True,
        text=True, timeout=30).stdout
    txt = None
    for line in browsed.splitlines():
        fields = line.split(";")
        if fields[0] == "=" and fields[2] == "IPv4" and fields[3] in ("desk a", "desk\\032a"):
            txt = [item.strip('"') for item in fields[9].split('" "')]
    check(txt is not None and any(item == "fp=" + desk_key for item in txt),
          "desk's TXT record read by avahi-browse", browsed)
    if txt is None:
        return
    conf = os.path.join(WORK, "dnsmasq.conf")
    with open(conf, "w") as out:
        out.write("\n".join([
            "no-resolv", "no-hosts", "bind-interfaces", "listen-address=10.215.2.254",
            "port=53", "local=/example.test/",
            "ptr-record=_ferry._tcp.example.test,deskdns._ferry._tcp.example.test",
            "srv-host=deskdns._ferry._tcp.example.test,desk.example.test,%d" % desk.port,
            "txt-record=deskdns._ferry._tcp.example.test," + ",".join(
                '"%s"' % item for item in txt),
            "host-record=desk.example.test,%s" % HOSTS["a"], ""]))
    dns = subprocess.Popen(
        ["ip", "netns", "exec", os.environ["FERRY_TEST_ROUTER"], "dnsmasq", "-k", "-C", conf,
         "--pid-file=" + os.path.join(WORK, "dnsmasq.pid"), "--log-facility=-"],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(WORK, "dnsmasq.log"), "w"))
    try:
        dns_log = os.path.join(WORK, "dnsmasq.log")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "started" not in open(dns_log).read():
            time.sleep(0.1)
        status, events, err = ferry("c", home("dns-sd"), "browse", "--domain", "example.test",
                                    "--timeout", "10", "--json")
        found = [e for e in events if e.get("event") == "peer-found"
                 and e.get("domain") == "example.test"]
        check(status == 0 and len(found) == 1 and found[0]["fingerprint"] == desk_key
              and found[0]["port"] == desk.port,
              "ferry browse --domain finds the receiver registered in a DNS server", events)
        status, _, err = ferry("c", home("dns-sd"), "send", "--domain", "example.test",
                               "--to", desk_key[:16], "--json", payload("dns.bin"))
        check(status == 0 and desk.holds("dns.bin"),
              "ferry send --domain reaches it by its key through unicast DNS-SD", err)
        # On desk's own subnet it is listed twice (mDNS and DNS): one receiver.
        status, _, err = ferry("b", home("dns-sd-b"), "send", "--domain", "example.test",
                               "--to", desk_key[:16], "--json", payload("both.bin"))
        check(status == 0 and desk.holds("both.bin"),
              "a receiver found by mDNS and in a DNS domain is one receiver", err)
        status, _, err = ferry("c", home("dns-sd"), "send", "--domain", "bad..domain",
                               "--to", desk_key[:16], payload("bad.bin"))
        check(status == 2 and "not a DNS domain" in err, "a domain that is not one: exit 2", err)
    finally:
        dns.terminate()
        dns.wait(10)


def terminated(signum, frame):
    raise SystemExit(128 + signum)


signal.signal(signal.SIGTERM, terminated)
try:
    main()
except Exception as error:  # a scenario that could not run is a failure, said
    check(False, "the scenarios ran to their end", repr(error))
finally:
    for receiver in started:
        receiver.stop()
    shutil.rmtree(WORK, ignore_errors=True)
sys.exit(1 if failures else 0)
