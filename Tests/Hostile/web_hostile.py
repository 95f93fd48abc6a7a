#!/usr/bin/env python3
"""Hostile HTTP clients against `ferry receive --web` (standard library only): traversal names,
oversized headers, a trickling head, wrong and replayed tokens. After each, the receiver lives,
has written nothing outside its folder, and an honest upload through the API still works.
Run by Tests/Web/run.sh inside a namespace with only loopback.

usage: web_hostile.py FERRY_BINARY
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

FERRY = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="ferry-web-hostile-")
failures = []


def check(ok, what):
    """One expectation, reported as scripts/test counts Swift Testing's."""
    what = "web hostile: " + what.replace('"', "'")
    print(('\u2714 Test "%s" passed after 0.000 seconds.' if ok
           else '\u2718 Test "%s" failed after 0.000 seconds.') % what, flush=True)
    if not ok:
        failures.append(what)


def start(extra=()):
    dest = os.path.join(WORK, "dest-%d" % time.monotonic_ns())
    os.makedirs(dest)
    env = dict(os.environ, FERRY_HOME=os.path.join(WORK, "home"),
               DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent/ferry-test-bus")
    proc = subprocess.Popen([FERRY, "receive", "--web", "--yes", "--json", "--port", "0",
                             "--dir", dest, *extra], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    for line in proc.stdout:
        event = json.loads(line)
        if event["event"] == "web-link":
            url = event["urls"][0]
            base, token = url.split("/r/")
            port = int(base.rsplit(":", 1)[1])
            return proc, port, token, dest
    raise SystemExit("no web-link")


def api(port, path, token, body=None, method="POST"):
    request = urllib.request.Request(
        "http://127.0.0.1:%d/api/localsend/v2/%s" % (port, path), data=body, method=method,
        headers={"x-ferry-token": token, "content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError as e:
        return 0, str(e).encode()


def prepare(port, token, names):
    files = {"f%d" % i: {"id": "f%d" % i, "fileName": n, "size": 5, "fileType": "text/plain"}
             for i, n in enumerate(names)}
    info = {"alias": "Browser", "version": "2.2", "deviceModel": None, "deviceType": "web",
            "fingerprint": "ab" * 32, "port": None, "protocol": "http", "download": False}
    body = json.dumps({"info": info, "files": files}).encode()
    for _ in range(20):
        # The session before may still be ending: busy (409) for a moment.
        status, answer = api(port, "prepare-upload", token, body)
        if status != 409:
            break
        time.sleep(0.25)
    return status, answer


def honest(port, token, dest, name):
    status, body = prepare(port, token, [name])
    if status != 200:
        return False
    answer = json.loads(body)
    status, _ = api(port, "upload?sessionId=%s&fileId=f0&token=%s"
                    % (answer["sessionId"], answer["files"]["f0"]), token, b"hello")
    deadline = time.time() + 10
    while time.time() < deadline and not os.path.exists(os.path.join(dest, name)):
        time.sleep(0.05)
    return status == 200 and open(os.path.join(dest, name), "rb").read() == b"hello"


def raw(port, data, read_for=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=read_for)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        return got
    except OSError:
        return b""
    finally:
        s.close()


def main():
    proc, port, token, dest = start()
    try:
        # Traversal and absolute names, and the Unicode look-alikes of a slash: refused whole.
        for name in ["../evil.txt", "/etc/evil.txt", "a/../../evil.txt", "a/\u0000b", "",
                     "a/./b", "a//b", "x/" * 300 + "deep"]:
            status, _ = prepare(port, token, [name])
            check(status in (400, 403), "name %r refused (%d)" % (name[:40], status))
        # Names that are one plain file name on Linux (a division slash, a backslash): taken
        # or refused, but never anywhere but inside the folder.
        for name in ["a\u2215..\u2215evil", "..\\evil.txt"]:
            status, body = prepare(port, token, [name])
            if status == 200:
                answer = json.loads(body)
                api(port, "upload?sessionId=%s&fileId=f0&token=%s"
                    % (answer["sessionId"], answer["files"]["f0"]), token, b"hello")
            check(status in (200, 400, 403), "name %r: taken or refused (%d)" % (name, status))
        time.sleep(0.5)
        check(not any(n for n in os.listdir(WORK) if "evil" in n), "nothing written outside")
        check(all(os.path.realpath(os.path.join(base, n)).startswith(os.path.realpath(dest))
                  for base, _, names in os.walk(dest) for n in names),
              "everything written is inside the folder")
        # 200 KiB of headers: refused, the receiver lives.
        reply = raw(port, b"GET /r/" + token.encode() + b" HTTP/1.1\r\nHost: x\r\nX-Big: "
                    + b"a" * (200 << 10) + b"\r\n\r\n")
        check(not reply.startswith(b"HTTP/1.1 200"), "oversized headers not served")
        check(proc.poll() is None, "alive after oversized headers")
        # A head trickled one byte a second: cut within the request deadline (10 s).
        s = socket.create_connection(("127.0.0.1", port))
        started = time.monotonic()
        closed_after = None
        try:
            for byte in b"GET /r/" + token.encode() + b" HTTP/1.1\r\nHost: x\r\n" + b"X" * 40:
                s.send(bytes([byte]))
                time.sleep(1)
                if time.monotonic() - started > 20:
                    break
        except OSError:
            closed_after = time.monotonic() - started
        s.close()
        check(closed_after is not None and closed_after < 15,
              "a trickled head is cut (after %s s)" % (closed_after and round(closed_after, 1)))
        # A prepare-upload body trickled one byte a second: cut within the request deadline.
        s = socket.create_connection(("127.0.0.1", port))
        started = time.monotonic()
        closed_after = None
        try:
            s.send(b"POST /api/localsend/v2/prepare-upload HTTP/1.1\r\nHost: x\r\n"
                   b"x-ferry-token: " + token.encode() + b"\r\ncontent-type: application/json"
                   b"\r\ncontent-length: 400\r\n\r\n")
            for _ in range(30):
                s.send(b" ")
                time.sleep(1)
        except OSError:
            closed_after = time.monotonic() - started
        s.close()
        check(closed_after is not None and closed_after < 15,
              "a trickled body is cut (after %s s)" % (closed_after and round(closed_after, 1)))
        # A wrong token on the API, a token in the query instead of the header, a token for
        # another file's upload: refused.
        status, _ = api(port, "info", "0" * 32, method="GET")
        check(status == 403, "wrong token on the API: 403 (%d)" % status)
        status, body = prepare(port, token, ["one.txt"])
        answer = json.loads(body) if status == 200 else {}
        if answer:
            status, _ = api(port, "upload?sessionId=%s&fileId=f0&token=%s"
                            % (answer["sessionId"], answer["files"]["f0"]), token, b"hello")
            check(status == 200, "an upload with its token: 200")
            time.sleep(0.5)
            status, _ = api(port, "upload?sessionId=%s&fileId=f0&token=%s"
                            % (answer["sessionId"], answer["files"]["f0"]), token, b"HELLO")
            check(status in (403, 409), "the same upload replayed: refused (%d)" % status)
            check(open(os.path.join(dest, "one.txt"), "rb").read() == b"hello",
                  "the replay wrote nothing")
        check(honest(port, token, dest, "honest.txt"), "an honest upload still works")
        # 20 wrong tokens from an address: its guesses are refused until the receiver stops;
        # the right token is not (a device guessing from many addresses must not lock the
        # person's browser out).
        for _ in range(20):
            api(port, "info", "f" * 32, method="GET")
        status, _ = api(port, "info", "e" * 32, method="GET")
        check(status == 429, "after 20 wrong tokens the address's guesses are refused: 429 (%d)"
              % status)
        status, _ = api(port, "info", token, method="GET")
        check(status == 200, "the right token from that address still works: 200 (%d)" % status)
        check(proc.poll() is None, "alive at the end")
    finally:
        proc.terminate()
        proc.wait(10)
    # A token from a receiver that ended is worth nothing to the next one.
    proc, port, new_token, dest = start()
    try:
        status, _ = api(port, "info", token, method="GET")
        check(status == 403, "an old receiver's token replayed: 403 (%d)" % status)
    finally:
        proc.terminate()
        proc.wait(10)
    share()
    stalled_download()
    shutil.rmtree(WORK, ignore_errors=True)
    sys.exit(1 if failures else 0)


def get_from(source, port, path, headers=None, method="GET", body=None):
    """A request from `source` (a loopback address of its own), as (status, body)."""
    import http.client
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10,
                                            source_address=(source, 0))
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read()
    except OSError:
        return 0, b""
    finally:
        connection.close()


def stalled_download():
    """ferry send --web, its link expiring in 3 s, and a browser that asks for a 64 MB file
    and reads nothing: the download is ended once nothing was written for 60 s, and the
    sender exits (an expired link waits for downloads under way, not for a silent browser)."""
    import select
    src = os.path.join(WORK, "big.bin")
    with open(src, "wb") as f:
        f.write(os.urandom(64 << 20))
    env = dict(os.environ, FERRY_HOME=os.path.join(WORK, "home-stall"),
               DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent/ferry-test-bus")
    proc = subprocess.Popen([FERRY, "send", "--web", "--yes", "--json", "--web-expires", "0.05",
                             src], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    url = next(json.loads(l)["urls"][0] for l in proc.stdout if b'"web-link"' in l)
    base, token = url.split("/r/")
    port = int(base.rsplit(":", 1)[1])
    status, body = get_from("127.0.0.1", port, "/api/localsend/v2/prepare-download",
                            {"x-ferry-token": token}, "POST", b"{}")
    session = json.loads(body)["sessionId"] if status == 200 else ""
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"GET /api/localsend/v2/download?sessionId=" + session.encode()
              + b"&fileId=f0 HTTP/1.1\r\nHost: x\r\n\r\n")
    started = time.monotonic()
    failed = False
    while time.monotonic() - started < 90 and proc.poll() is None:
        ready, _, _ = select.select([proc.stdout], [], [], 1)
        if ready:
            line = proc.stdout.readline()
            failed = failed or b'"failed"' in line
    took = time.monotonic() - started
    s.close()
    code = proc.poll()
    if code is None:
        proc.kill()
    check(failed and code is not None and 55 < took < 80,
          "a browser that reads nothing: the download ends after 60 s, the sender exits "
          "(after %.0f s, exit %s)" % (took, code))


def share():
    """ferry send --web: a session is its address's, file ids are the ones offered."""
    src = os.path.join(WORK, "share.txt")
    with open(src, "wb") as f:
        f.write(b"shared")
    env = dict(os.environ, FERRY_HOME=os.path.join(WORK, "home-share"),
               DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent/ferry-test-bus")
    proc = subprocess.Popen([FERRY, "send", "--web", "--yes", "--json", src], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    url = next(json.loads(l)["urls"][0] for l in proc.stdout if b'"web-link"' in l)
    base, token = url.split("/r/")
    port = int(base.rsplit(":", 1)[1])
    try:
        status, _ = get_from("127.0.0.1", port, "/api/localsend/v2/prepare-download",
                             {"x-ferry-token": "0" * 32}, "POST", b"{}")
        check(status == 403, "share: a wrong token on prepare-download: 403 (%d)" % status)
        status, body = get_from("127.0.0.1", port, "/api/localsend/v2/prepare-download",
                                {"x-ferry-token": token}, "POST", b"{}")
        session = json.loads(body)["sessionId"] if status == 200 else ""
        check(status == 200, "share: prepare-download with the token (%d)" % status)
        path = "/api/localsend/v2/download?sessionId=%s&fileId=" % session
        status, body = get_from("127.0.0.1", port, path + "f0")
        check(status == 200 and body == b"shared", "share: the file, to its session's address")
        status, _ = get_from("127.0.0.2", port, path + "f0")
        check(status == 403, "share: the session from another address: 403 (%d)" % status)
        for bad in ["f1", "f-1", "../f0", "f0%00", "x", "f99999999999999999999"]:
            status, _ = get_from("127.0.0.1", port, path + bad)
            check(status == 404, "share: file id %r: 404 (%d)" % (bad, status))
        status, _ = get_from("127.0.0.1", port, "/api/localsend/v2/download?sessionId=nope&fileId=f0")
        check(status == 403, "share: an unknown session: 403 (%d)" % status)
        # The whole set as a zip, and what was downloaded: the session's address only.
        for route in ("/api/ferry/v1/download-all", "/api/ferry/v1/downloaded"):
            status, _ = get_from("127.0.0.2", port, route + "?sessionId=" + session)
            check(status == 403, "share: %s from another address: 403 (%d)" % (route, status))
            status, _ = get_from("127.0.0.1", port, route + "?sessionId=nope")
            check(status == 403, "share: %s of an unknown session: 403 (%d)" % (route, status))
        status, body = get_from("127.0.0.1", port, "/api/ferry/v1/downloaded?sessionId=" + session)
        check(status == 200 and json.loads(body) == {"downloaded": ["f0"]},
              "share: the file downloaded is listed (%d %r)" % (status, body[:60]))
        status, body = get_from("127.0.0.1", port, "/api/ferry/v1/download-all?sessionId=" + session)
        check(status == 200 and body[:4] == b"PK\x03\x04" and b"shared" in body,
              "share: the zip, to its session's address (%d)" % status)
        status, _ = get_from("127.0.0.1", port, "/api/localsend/v2/prepare-download",
                             {"x-ferry-token": token, "content-length": "100000"}, "POST",
                             b"x" * 100000)
        check(status == 413, "share: a 100 kB body: 413 (%d)" % status)
        # The file swapped for a FIFO, then for a link to another file of the same size: 409,
        # at once (nothing blocks on the FIFO), and the server lives.
        os.remove(src)
        os.mkfifo(src)
        started = time.monotonic()
        status, _ = get_from("127.0.0.1", port, path + "f0")
        check(status == 409 and time.monotonic() - started < 5,
              "share: a FIFO in the file's place: 409 at once (%d)" % status)
        os.remove(src)
        other = os.path.join(WORK, "other.txt")
        with open(other, "wb") as f:
            f.write(b"secret")
        os.symlink(other, src)
        status, body = get_from("127.0.0.1", port, path + "f0")
        check(status == 409 and b"secret" not in body,
              "share: a link in the file's place: 409 (%d)" % status)
        # One write, two chunks past the body cap: answered once (413), not twice.
        chunked = (b"POST /api/localsend/v2/prepare-download HTTP/1.1\r\nHost: x\r\n"
                   b"x-ferry-token: " + token.encode() + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
                   b"1001\r\n" + b"a" * 4097 + b"\r\n1\r\nb\r\n0\r\n\r\n")
        reply = raw(port, chunked)
        check(reply.count(b"HTTP/1.1 ") == 1 and b" 413 " in reply,
              "share: a chunked body past the cap is answered once (%r)" % reply[:40])
        check(proc.poll() is None, "share: alive at the end")
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
