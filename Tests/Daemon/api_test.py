#!/usr/bin/env python3
"""`ferry daemon`'s control API, driven as its users drive it: curl on the Unix socket, a
Python client that openapi-python-client writes from docs/api/openapi.yaml (nobody here writes
it), raw sockets for malformed, oversized and slow requests, another user, and schemathesis
fuzzing the running daemon from the same document. Every JSON answer is validated against
the document (jsonschema). Run by Tests/Daemon/run.sh inside scripts/harness/local.sh (a
private avahi-daemon on loopback), with .build-pypi-daemon on PYTHONPATH.

usage: api_test.py FERRY_BINARY
"""
import http.client
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

import jsonschema
import referencing
import yaml

FERRY = sys.argv[1]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCUMENT_PATH = os.path.join(ROOT, "docs", "api", "openapi.yaml")
DOCUMENT = yaml.safe_load(open(DOCUMENT_PATH))
WORK = tempfile.mkdtemp(prefix="ferry-daemon-api-")
os.chmod(WORK, 0o755)
failures = []


def check(ok, what):
    """One expectation, reported as scripts/test counts Swift Testing's."""
    what = "daemon API: " + what.replace('"', "'")
    print(('\u2714 Test "%s" passed after 0.000 seconds.' if ok
           else '\u2718 Test "%s" failed after 0.000 seconds.') % what, flush=True)
    if not ok:
        failures.append(what)


# MARK: validation against the document

REGISTRY = referencing.Registry().with_resource(
    "urn:ferry-api", referencing.Resource.from_contents(
        DOCUMENT, default_specification=referencing.jsonschema.DRAFT202012))


def schema_for(path_template, method, status):
    """The JSON schema of the answer `status` to `method` on `path_template`."""
    operation = DOCUMENT["paths"][path_template][method.lower()]
    response = operation["responses"].get(str(status)) or operation["responses"]["default"]
    if "$ref" in response:
        response = DOCUMENT["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
    content = response["content"]
    return content.get("application/json", {}).get("schema")


def valid(path_template, method, status, body):
    """Whether `body` (JSON) is what the document says the answer is; the error if not."""
    schema = schema_for(path_template, method, status)
    if schema is None:
        return True, ""
    if "$ref" in schema:
        schema = {"$ref": "urn:ferry-api" + schema["$ref"]}
    validator = jsonschema.Draft202012Validator(
        schema, registry=REGISTRY, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = list(validator.iter_errors(body))
    return not errors, "; ".join(e.message for e in errors[:3])


# MARK: the daemon

class Daemon:
    """A `ferry daemon` with a home, runtime folder and config of its own."""

    def __init__(self, name="api-daemon", extra=()):
        self.base = tempfile.mkdtemp(prefix="d-", dir=WORK)
        os.chmod(self.base, 0o755)
        self.home = os.path.join(self.base, "home")
        self.runtime = os.path.join(self.base, "run")
        self.inbox = os.path.join(self.base, "in")
        os.makedirs(self.runtime)
        os.makedirs(self.inbox)
        self.config = os.path.join(self.base, "config.toml")
        with open(self.config, "w") as f:
            f.write('[receive]\ndir = "%s"\nname = "%s"\n%s[daemon]\nnotify = false\n'
                    % (self.inbox, name, "".join(line + "\n" for line in extra)))
        self.socket = os.path.join(self.runtime, "ferry", "api.sock")
        self.env = dict(os.environ, FERRY_HOME=self.home, XDG_RUNTIME_DIR=self.runtime)
        self.proc = None

    def start(self):
        self.log = open(os.path.join(self.base, "daemon.err"), "a")
        self.proc = subprocess.Popen([FERRY, "daemon", "--config", self.config], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if os.path.exists(self.socket):
                try:
                    status, _, _ = self.request("GET", "/v1/status")
                    if status == 200:
                        return self
                except OSError:
                    pass
            time.sleep(0.1)
        raise SystemExit("the daemon did not start: " + open(self.log.name).read())

    def stop(self, signal_number=15):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal_number)
            try:
                return self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait()
        return self.proc.returncode if self.proc else None

    def request(self, method, path, body=None, headers=None, timeout=10):
        """One request on a connection of its own: (status, headers, body bytes)."""
        connection = UnixConnection(self.socket, timeout=timeout)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def json(self, method, path, template, body=None):
        """A request whose answer is JSON, validated against the document."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"content-type": "application/json"} if data is not None else {}
        status, _, raw = self.request(method, path, body=data, headers=headers)
        answer = json.loads(raw) if raw else None
        ok, why = valid(template, method, status, answer)
        check(ok, "%s %s (%d) is what the document says%s" % (
            method, template, status, "" if ok else ": " + why))
        return status, answer

    def ferry(self, *arguments, env=None, timeout=60, stdin=subprocess.DEVNULL):
        return subprocess.run([FERRY, *arguments], env=env or self.env, capture_output=True,
                              text=True, timeout=timeout, stdin=stdin)


class UnixConnection(http.client.HTTPConnection):
    """http.client on a Unix socket, as DAEMON.md shows."""

    def __init__(self, path, timeout=10):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def curl(daemon, *arguments, user=None):
    command = ["curl", "-sS", "--max-time", "10", "--unix-socket", daemon.socket, *arguments]
    if user is not None:
        command = ["setpriv", "--reuid=%d" % user, "--regid=%d" % user, "--clear-groups"] + command
    return subprocess.run(command, capture_output=True, text=True, timeout=30)


def raw(daemon, data, read_timeout=15):
    """Bytes written on a fresh connection, and what came back until it closed (or the timeout)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(read_timeout)
    s.connect(daemon.socket)
    try:
        s.sendall(data)
    except OSError:
        pass
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    return got


def a_file(name, size=1000):
    path = os.path.join(WORK, name)
    with open(path, "wb") as f:
        f.write(os.urandom(size))
    return path


KEY = "AB" * 32

# MARK: the tests


def test_socket_and_users(daemon):
    folder = os.path.dirname(daemon.socket)
    mode = stat.S_IMODE(os.stat(folder).st_mode)
    check(mode == 0o700, "the socket's folder is 0700 (%o)" % mode)
    mode = stat.S_IMODE(os.stat(daemon.socket).st_mode)
    check(mode == 0o600, "the socket is 0600 (%o)" % mode)
    # Another user cannot reach it at all...
    other = curl(daemon, "http://localhost/v1/status", user=65534)
    check(other.returncode != 0 and "forbidden" not in other.stdout,
          "another user cannot connect (%d: %s)" % (other.returncode, other.stderr.strip()))
    # ...and should the folder and socket be opened up, its credentials turn it away.
    os.chmod(folder, 0o711)
    os.chmod(daemon.socket, 0o666)
    try:
        other = curl(daemon, "-i", "http://localhost/v1/status", user=65534)
        check(" 403 " in other.stdout and '"forbidden"' in other.stdout
              and "65534" in other.stdout,
              "another user whose connection gets through is refused by its credentials: %s"
              % other.stdout.replace("\r\n", " ")[:200])
        mine = curl(daemon, "http://localhost/v1/status")
        check('"fingerprint"' in mine.stdout, "the daemon's own user still gets its answers")
    finally:
        os.chmod(folder, 0o700)
        os.chmod(daemon.socket, 0o600)


def test_endpoints_with_curl(daemon):
    for path, template in [("/v1/status", "/v1/status"), ("/v1/peers", "/v1/peers"),
                           ("/v1/sends", "/v1/sends"), ("/v1/offers", "/v1/offers"),
                           ("/v1/history", "/v1/history"), ("/v1/history?limit=3", "/v1/history")]:
        answer = curl(daemon, "-w", "\n%{http_code}", "http://localhost" + path)
        body, _, code = answer.stdout.rpartition("\n")
        ok, why = valid(template, "get", int(code or 0), json.loads(body or "null"))
        check(code == "200" and ok, "curl GET %s: 200, valid %s" % (path, why))
    document = curl(daemon, "http://localhost/v1/openapi.yaml")
    check(document.stdout == open(DOCUMENT_PATH).read(),
          "GET /v1/openapi.yaml serves docs/api/openapi.yaml as it is")


def test_errors(daemon):
    status, answer = daemon.json("GET", "/v1/nothing", "/v1/status")
    check(status == 404 and answer["error"]["code"] == "not-found", "an unknown path: 404 not-found")
    status, headers, body = daemon.request("DELETE", "/v1/status")
    check(status == 405 and headers.get("allow") == "GET",
          "a wrong method: 405 with Allow (%s)" % headers)
    status, headers, body = daemon.request(
        "POST", "/v1/sends", body=b"{not json", headers={"content-type": "application/json"})
    answer = json.loads(body)
    check(status == 400 and answer["error"]["code"] == "bad-request",
          "a body that is not JSON: 400 bad-request, JSON words (%s)" % answer)
    status, answer = daemon.json("POST", "/v1/sends", "/v1/sends",
                                 {"paths": ["/etc/hostname"], "to": KEY, "colour": "red"})
    check(status == 400, "a field the document does not list: 400 (%s)" % answer)
    status, answer = daemon.json("POST", "/v1/sends", "/v1/sends", {"paths": ["relative.txt"], "to": KEY})
    check(status == 400 and "absolute" in answer["error"]["message"], "a relative path: 400, said why")
    status, answer = daemon.json("POST", "/v1/sends", "/v1/sends",
                                 {"paths": [a_file("x.txt")], "to": "nobody-around"})
    check(status == 404 and answer["error"]["code"] == "unknown-peer", "a name nobody has: 404 unknown-peer")
    status, answer = daemon.json("POST", "/v1/sends", "/v1/sends",
                                 {"paths": ["/nonexistent/file"], "to": KEY})
    check(status == 400 and answer["error"]["code"] == "cannot-read", "a path that is not there: 400 cannot-read")
    status, answer = daemon.json("GET", "/v1/sends/0123456789abcdef", "/v1/sends/{id}")
    check(status == 404, "a send that does not exist: 404")
    status, answer = daemon.json("GET", "/v1/sends/..%2f..%2fetc", "/v1/sends/{id}")
    check(status == 404, "an id that is a path: 404, nothing read")
    status, answer = daemon.json("POST", "/v1/offers/0123456789abcdef/accept", "/v1/offers/{id}/accept")
    check(status == 404 and answer["error"]["code"] == "not-pending", "an offer not waiting: 404 not-pending")
    status, answer = daemon.json("GET", "/v1/history?limit=0", "/v1/history")
    check(status == 400, "limit 0: 400")
    status, answer = daemon.json("GET", "/v1/events?since=-4&follow=false", "/v1/events")
    check(status == 400, "a negative cursor: 400")
    status, answer = daemon.json("GET", "/v1/events?follow=maybe", "/v1/events")
    check(status == 400, "follow that is no boolean: 400")


def test_oversized_and_slow(daemon):
    big = b'{"paths":["' + b"a" * (70 * 1024) + b'"],"to":"x"}'
    head = b"POST /v1/sends HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(big)
    got = raw(daemon, head + big)
    check(b" 413 " in got.split(b"\r\n")[0] and b"too-large" in got,
          "a 70 KiB body: 413 too-large, the body unread (%r)" % got[:80])
    got = raw(daemon, b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nhost: x\r\n\r\n")
    check(b" 414 " in got.split(b"\r\n")[0] or b" 431 " in got.split(b"\r\n")[0] or b" 400 " in got.split(b"\r\n")[0],
          "a 9 KB request target is refused (%r)" % got[:60])
    got = raw(daemon, b"GET /v1/status HTTP/1.1\r\n" + b"x-pad: " + b"b" * 200000 + b"\r\n\r\n")
    check(not got.startswith(b"HTTP/1.1 200"), "200 KB of headers is refused (%r)" % got[:60])
    got = raw(daemon, b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + os.urandom(200))
    check(not got.startswith(b"HTTP/1.1 200"), "TLS bytes get no answer but an error")
    # A head trickled over 12 s: the connection is closed at 10 s; others are answered
    # meanwhile.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(daemon.socket)
    started = time.monotonic()
    closed_at = None
    s.settimeout(1)
    answered = False
    for piece in b"GET /v1/status HTTP/1.1\r\nho":
        try:
            s.send(bytes([piece]))
        except OSError:
            closed_at = time.monotonic() - started
            break
        try:
            if s.recv(100) == b"":
                closed_at = time.monotonic() - started
                break
        except socket.timeout:
            pass
        if not answered:
            status, _, _ = daemon.request("GET", "/v1/status", timeout=3)
            answered = status == 200
    s.close()
    check(closed_at is not None and closed_at < 10 + 5,
          "a head trickled byte by byte is cut at the 10 s deadline (%s)" % closed_at)
    check(answered, "another client is answered while one trickles")


def test_many_connections(daemon):
    held = []
    for _ in range(40):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(daemon.socket)
        held.append(s)
    time.sleep(0.5)
    status, _, _ = daemon.request("GET", "/v1/status", timeout=5)
    check(status == 200, "40 idle connections held: a new request is still answered (idle ones give way)")
    alive = 0
    for s in held:
        s.settimeout(0.2)
        try:
            alive += s.recv(1) != b""
        except socket.timeout:
            alive += 1
        except OSError:
            pass
        s.close()
    check(alive <= 16, "at most 16 connections stay open (%d did)" % alive)


def test_sends_and_events(daemon):
    status, events = daemon.request("GET", "/v1/events?since=0&follow=false")[0::2]
    lines = [json.loads(line) for line in events.decode().splitlines()]
    last = max([line["id"] for line in lines] or [0])
    path = a_file("queued.bin", 5000)
    status, send = daemon.json("POST", "/v1/sends", "/v1/sends", {"paths": [path], "to": KEY, "expiresIn": 3600})
    check(status == 201 and send["state"] == "queued" and send["fileCount"] == 1,
          "POST /v1/sends queues: 201, queued, its file listed")
    stored = os.path.join(daemon.home, "outbox", send["id"] + ".json")
    check(os.path.exists(stored) and stat.S_IMODE(os.stat(stored).st_mode) == 0o600,
          "the send is on disk (0600) when the answer comes")
    status, one = daemon.json("GET", "/v1/sends/" + send["id"], "/v1/sends/{id}")
    check(status == 200 and one["files"] == [{"path": "queued.bin", "status": "pending"}],
          "GET /v1/sends/{id} has its files")
    status, raw_events = daemon.request("GET", "/v1/events?since=%d&follow=false" % last)[0::2]
    after = [json.loads(line) for line in raw_events.decode().splitlines()]
    # (Greater, not next: events not kept for replay — a peer found, progress — take numbers.)
    check([e["event"] for e in after] == ["queued"] and after[0]["send"] == send["id"]
          and after[0]["id"] > last,
          "the cursor replays only what came after it: %s" % [e.get("event") for e in after])
    # A follower sees it live.
    got = []

    def follow():
        connection = UnixConnection(daemon.socket, timeout=10)
        connection.request("GET", "/v1/events")
        response = connection.getresponse()
        got.append(response.getheader("content-type"))
        got.append(json.loads(response.readline()))
        connection.close()
    thread = threading.Thread(target=follow)
    thread.start()
    time.sleep(0.5)
    status, cancelled = daemon.json("DELETE", "/v1/sends/" + send["id"], "/v1/sends/{id}")
    thread.join(10)
    check(status == 200 and cancelled["state"] == "cancelled", "DELETE cancels a queued send")
    check(len(got) == 2 and got[0] == "application/x-ndjson" and got[1]["event"] == "send-ended"
          and got[1]["state"] == "cancelled",
          "a follower gets the send-ended event live (%s)" % got)
    # A reader that never reads does not hold the daemon.
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.connect(daemon.socket)
    stuck.sendall(b"GET /v1/events?since=0 HTTP/1.1\r\nhost: x\r\n\r\n")
    started = time.monotonic()
    for index in range(150):
        daemon.request("POST", "/v1/sends", body=json.dumps(
            {"paths": [path], "to": KEY}).encode(), headers={"content-type": "application/json"})
    elapsed = time.monotonic() - started
    status, _, _ = daemon.request("GET", "/v1/status", timeout=3)
    check(status == 200 and elapsed < 60,
          "150 sends queued and status answered while a reader reads nothing (%.1f s)" % elapsed)
    stuck.close()


def test_restart_and_corrupt(daemon):
    status, sends = daemon.json("GET", "/v1/sends", "/v1/sends")
    before = {s["id"]: s["state"] for s in sends["sends"]}
    garbage = os.path.join(daemon.home, "outbox", "0123456789abcdef.json")
    with open(garbage, "w") as f:
        f.write('{"this is": "not a send"')
    code = daemon.stop()
    check(code == 0, "SIGTERM stops the daemon: exit 0 (%s)" % code)
    check(not os.path.exists(daemon.socket), "its socket is removed")
    daemon.start()
    status, sends = daemon.json("GET", "/v1/sends", "/v1/sends")
    after = {s["id"]: s["state"] for s in sends["sends"]}
    check(after == before, "every send is listed again after a restart, as it was")
    aside = os.listdir(os.path.join(daemon.home, "outbox", "corrupt"))
    check(not os.path.exists(garbage) and any(n.startswith("0123456789abcdef.json") for n in aside),
          "a file that is not a send is moved aside, not deleted (%s)" % aside)
    status, raw_events = daemon.request("GET", "/v1/events?since=0&follow=false")[0::2]
    problems = [json.loads(l) for l in raw_events.decode().splitlines()
                if '"outbox-problem"' in l]
    check(len(problems) == 1 and "corrupt" in problems[0]["path"], "and reported (outbox-problem)")


def test_generated_client(daemon):
    """The client openapi-python-client writes from the document, on the Unix socket."""
    out = os.path.join(WORK, "client")
    generated = subprocess.run(
        [sys.executable, "-c", "import sys; from openapi_python_client.cli import app; sys.exit(app())",
         "generate", "--path", DOCUMENT_PATH, "--output-path", os.path.join(out, "ferry_api"),
         "--meta", "none"], capture_output=True, text=True, timeout=300)
    check(os.path.exists(os.path.join(out, "ferry_api", "client.py")),
          "openapi-python-client writes a client from the document (%s)" % generated.stderr[-300:])
    sys.path.insert(0, out)
    import httpx
    from ferry_api import Client
    from ferry_api.api.default import (accept_offer, cancel_send, create_send, get_send,
                                       get_status, list_offers, list_peers, list_sends)
    from ferry_api.models import Error, SendRequest, SendRequestWhen
    client = Client(base_url="http://localhost",
                    httpx_args={"transport": httpx.HTTPTransport(uds=daemon.socket)},
                    raise_on_unexpected_status=True)
    status = get_status.sync(client=client)
    check(status is not None and len(status.fingerprint) == 64 and status.pid == daemon.proc.pid,
          "the generated client reads the status")
    check(list_peers.sync(client=client) is not None, "and the peers")
    path = a_file("client.bin", 3000)
    created = create_send.sync(client=client, body=SendRequest(
        paths=[path], to=KEY, when=SendRequestWhen.SEEN, expires_in=600))
    check(created is not None and created.state.value == "queued", "it queues a send")
    fetched = get_send.sync(client=client, id=created.id)
    check(fetched.id == created.id and len(fetched.files) == 1, "reads it back with its files")
    listed = list_sends.sync(client=client)
    check(any(s.id == created.id for s in listed.sends), "finds it in the list")
    ended = cancel_send.sync(client=client, id=created.id)
    check(ended.state.value == "cancelled", "cancels it")
    check(list_offers.sync(client=client).offers == [], "no offers wait")
    answer = accept_offer.sync(client=client, id="0123456789abcdef")
    check(isinstance(answer, Error) and answer.error.code == "not-pending",
          "accepting what does not wait is the document's Error")


def test_offers_by_api(daemon):
    """A Ferry sender asks; the question waits in the API; accepted and declined by id."""
    for answer_with in ["accept", "decline"]:
        sender_home = os.path.join(WORK, "sender-" + answer_with)
        path = a_file("asked-%s.txt" % answer_with, 2000)
        sender = subprocess.Popen(
            [FERRY, "send", "--json", "--to", "api-daemon", "--timeout", "60", path],
            env=dict(os.environ, FERRY_HOME=sender_home, XDG_RUNTIME_DIR=os.path.join(WORK, "nowhere")),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        offer = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and offer is None:
            listed = daemon.ferry("offers", "--json")
            lines = [json.loads(l) for l in listed.stdout.splitlines() if l.strip()]
            offer = lines[0] if lines else None
            time.sleep(0.3)
        check(offer is not None, "ferry offers lists the waiting sender (%s)" % answer_with)
        if offer is None:
            sender.kill()
            continue
        ok, why = valid("/v1/offers", "get", 200, {"offers": [offer]})
        check(ok and offer["kind"] == "invitation" and offer["files"] == 1 and offer["code"],
              "its question is the document's Offer, with the code %s" % why)
        answered = daemon.ferry(answer_with, offer["id"])
        check(answered.returncode == 0, "ferry %s ID: exit 0 (%s)" % (answer_with, answered.stderr))
        try:
            out, err = sender.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            sender.kill()
            out, err = sender.communicate()
        if answer_with == "accept":
            check(sender.returncode == 0 and os.path.exists(
                os.path.join(daemon.inbox, os.path.basename(path))),
                "accepted: the sender exits 0 and the file is in the daemon's folder (%s)" % err[-200:])
        else:
            check(sender.returncode == 4, "declined: the sender exits 4 (%s)" % sender.returncode)
        again = daemon.ferry(answer_with, offer["id"])
        check(again.returncode != 0 and "not waiting" in again.stderr or "no question" in again.stderr,
              "answering it again is refused, in words (%s)" % again.stderr.strip())
    status, history = daemon.json("GET", "/v1/history", "/v1/history")
    outcomes = [entry["outcome"] for entry in history["entries"] if entry["direction"] == "received"]
    check("done" in outcomes and "declined" in outcomes, "the history has both (%s)" % outcomes)


def test_cli_without_and_with_daemon(daemon):
    nowhere = dict(os.environ, FERRY_HOME=os.path.join(WORK, "lonely"),
                   XDG_RUNTIME_DIR=os.path.join(WORK, "lonely-run"))
    later = daemon.ferry("send", "--later", "--to", KEY, a_file("l.txt"), env=nowhere)
    check(later.returncode == 2 and "ferry daemon" in later.stderr,
          "send --later without a daemon: exit 2, says how to start one (%s)" % later.stderr.strip())
    status = daemon.ferry("status", env=nowhere)
    check(status.returncode == 2, "status without a daemon: exit 2")
    receive = daemon.ferry("receive", "--yes", "--dir", daemon.inbox, timeout=30)
    check(receive.returncode == 2 and "pid %d" % daemon.proc.pid in receive.stderr
          and "systemctl --user stop ferry" in receive.stderr,
          "ferry receive while the daemon runs: exit 2, names it and how to stop it (%s)"
          % receive.stderr.strip()[:200])
    mine = daemon.ferry("status")
    check(mine.returncode == 0 and "api-daemon" in mine.stdout, "ferry status: the daemon's name")


def test_one_daemon_per_home(daemon):
    second = subprocess.run([FERRY, "daemon", "--config", daemon.config],
                            env=dict(daemon.env, XDG_RUNTIME_DIR=os.path.join(daemon.base, "other-run")),
                            capture_output=True, text=True, timeout=30)
    check(second.returncode == 2 and "another ferry daemon runs for this home" in second.stderr
          and "pid %d" % daemon.proc.pid in second.stderr,
          "a second daemon on the same home exits 2, naming the first (%s)" % second.stderr.strip())
    shared = os.path.join(WORK, "shared")
    os.makedirs(shared, exist_ok=True)
    os.chmod(shared, 0o777)
    other_home = os.path.join(WORK, "other-home")
    third = subprocess.run([FERRY, "daemon", "--config", daemon.config, "--socket",
                            os.path.join(shared, "api.sock")],
                           env=dict(daemon.env, FERRY_HOME=other_home),
                           capture_output=True, text=True, timeout=30)
    mode = stat.S_IMODE(os.stat(shared).st_mode)
    check(third.returncode == 2 and "others may enter it" in third.stderr and mode == 0o777,
          "a socket in a folder others may enter is refused, the folder left as it was (%s, %o)"
          % (third.stderr.strip(), mode))


def test_changed_since_queued(daemon):
    """What was queued is what goes: a file changed since is reported, an empty folder filled
    since is not walked."""
    receiver_home = os.path.join(WORK, "receiver-home")
    inbox = os.path.join(WORK, "receiver-in")
    os.makedirs(inbox)
    identity = subprocess.run([FERRY, "identity", "--json"], capture_output=True, text=True,
                              env=dict(os.environ, FERRY_HOME=receiver_home))
    key = json.loads(identity.stdout.splitlines()[0])["fingerprint"]
    tree = os.path.join(WORK, "tree")
    os.makedirs(os.path.join(tree, "empty"))
    for name in ["kept.txt", "changed.txt", "gone.txt"]:
        with open(os.path.join(tree, name), "w") as f:
            f.write(name * 100)
    status, send = daemon.json("POST", "/v1/sends", "/v1/sends", {"paths": [tree], "to": key})
    check(status == 201 and send["fileCount"] == 4, "a tree with an empty folder is queued (%s)" % send)
    with open(os.path.join(tree, "changed.txt"), "a") as f:
        f.write("more")
    os.remove(os.path.join(tree, "gone.txt"))
    with open(os.path.join(tree, "empty", "secret.txt"), "w") as f:
        f.write("never queued")
    receiver = subprocess.Popen(
        [FERRY, "receive", "--yes", "--json", "--dir", inbox, "--name", "changed-rx"],
        env=dict(os.environ, FERRY_HOME=receiver_home,
                 XDG_RUNTIME_DIR=os.path.join(WORK, "receiver-run")),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        one = None
        while time.monotonic() < deadline:
            status, one = daemon.json("GET", "/v1/sends/" + send["id"], "/v1/sends/{id}")
            if one["state"] not in ("queued", "delivering"):
                break
            time.sleep(0.5)
        verdicts = {f["path"]: f["status"] for f in one["files"]}
        check(verdicts == {"tree/kept.txt": "stored", "tree/changed.txt": "changed",
                           "tree/gone.txt": "missing", "tree/empty": "changed"},
              "each file's verdict: stored, changed, missing, and the folder filled since (%s)"
              % verdicts)
        check(one["state"] == "delivered" and "error" not in one,
              "the rest is delivered: the send is delivered, its verdicts say what was not (%s)"
              % one["state"])
        status, raw_events = daemon.request("GET", "/v1/events?since=0&follow=false")[0::2]
        ended = [json.loads(l) for l in raw_events.decode().splitlines()
                 if '"send-ended"' in l and send["id"] in l]
        check(len(ended) == 1 and ended[0]["changed"] == 3 and ended[0]["delivered"] == 1,
              "its send-ended event counts what changed (%s)" % ended)
        check(os.path.exists(os.path.join(inbox, "tree", "kept.txt"))
              and not os.path.exists(os.path.join(inbox, "tree", "empty", "secret.txt"))
              and not os.path.exists(os.path.join(inbox, "tree", "changed.txt")),
              "only what was queued, as it was, arrived")
    finally:
        receiver.terminate()
        receiver.wait(timeout=20)


class Forwarder(threading.Thread):
    """TCP on 127.0.0.1 to the daemon's Unix socket, for schemathesis (whose HTTP client has
    no Unix sockets)."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]

    def run(self):
        while True:
            client, _ = self.listener.accept()
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.path)
            except OSError:
                client.close()
                continue
            for a, b in [(client, upstream), (upstream, client)]:
                threading.Thread(target=self.pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def pipe(source, target):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                target.sendall(data)
        except OSError:
            pass
        for s in (source, target):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def test_schemathesis(daemon):
    forwarder = Forwarder(daemon.socket)
    forwarder.start()
    report = os.path.join(WORK, "schemathesis.txt")
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-c", "import sys; from schemathesis.cli import schemathesis; sys.exit(schemathesis())",
         "run", DOCUMENT_PATH, "--url", "http://127.0.0.1:%d" % forwarder.port,
         "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
         "response_schema_conformance",
         "--max-examples", "100", "--request-timeout", "15", "--workers", "2",
         "--exclude-path", "/v1/events", "--suppress-health-check", "all",
         # Its coverage phase trips over a CPython 3.11 bug in its own code (the ast module's
         # "AST constructor recursion depth mismatch", now and then): the fuzzing phase, in
         # positive and negative modes, and the stateful one do the work here.
         "--phases", "examples,fuzzing,stateful", "--mode", "all",
         "--no-color"],
        capture_output=True, text=True, timeout=900, cwd=WORK,
        env=dict(os.environ, SCHEMATHESIS_HOOKS=""))
    with open(report, "w") as f:
        f.write(run.stdout + run.stderr)
    tail = (run.stdout + run.stderr)[-1500:]
    check(run.returncode == 0, "schemathesis finds no 5xx, no answer outside the document "
          "(%.0f s): %s" % (time.monotonic() - started, tail.replace("\n", " | ")))
    status, _, _ = daemon.request("GET", "/v1/status", timeout=5)
    check(status == 200 and daemon.proc.poll() is None, "the daemon lives on after the fuzzing")


def main():
    daemon = Daemon().start()
    try:
        for test in [test_socket_and_users, test_endpoints_with_curl, test_errors,
                     test_oversized_and_slow, test_many_connections, test_sends_and_events,
                     test_restart_and_corrupt, test_generated_client, test_offers_by_api,
                     test_cli_without_and_with_daemon, test_one_daemon_per_home,
                     test_changed_since_queued, test_schemathesis]:
            try:
                test(daemon)
            except Exception as error:  # noqa: BLE001 - a test that raises is one failure
                check(False, "%s raised %r" % (test.__name__, error))
            check(daemon.proc.poll() is None, "the daemon is alive after %s" % test.__name__)
    finally:
        daemon.stop()
        if not failures:
            shutil.rmtree(WORK, ignore_errors=True)
        else:
            print("left for inspection: " + WORK, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
