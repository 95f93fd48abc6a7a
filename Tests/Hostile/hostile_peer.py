#!/usr/bin/env python3
"""A hostile Ferry peer.

Written from docs/PROTOCOL.md alone, with the Python 3 standard library only (ssl, socket,
struct, hashlib, hmac, json): it shares no code with Ferry, so a bug in Ferry's codec cannot hide the
same bug here. It attacks `ferry receive` as a sender (`attack ...`) and `ferry send` as a
receiver (`serve ...`), and reports what it saw as one JSON object per line on stdout; the
tests in Tests/FerryIntegrationTests/HostilePeerTests.swift decide what is right.

    hostile_peer.py identity DIR
    hostile_peer.py attack HOST PORT SCENARIO [--option value ...]
    hostile_peer.py serve SCENARIO [--port N] [--option value ...]
    hostile_peer.py relay TARGET-PORT [--peer-fingerprint FP] [--connections N]

Run `hostile_peer.py --help` for the scenarios.
"""

import argparse
import hashlib
import hmac
import json
import os
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

# Frame types (PROTOCOL.md §3).
HELLO, INVITE, ACCEPT, DECLINE, CANCEL, PING, PONG, GOODBYE, COMMIT, REVEAL = range(1, 11)
MESSAGE, STREAM_OPEN, STREAM_DATA, STREAM_END, RESET, CREDIT = range(0x10, 0x16)
OFFER, OFFER_ACCEPT, CHUNK, FILE_END, FILE_ACK = range(0x20, 0x25)
NAMES = {
    1: "HELLO", 2: "INVITE", 3: "ACCEPT", 4: "DECLINE", 5: "CANCEL", 6: "PING", 7: "PONG",
    8: "GOODBYE", 9: "COMMIT", 10: "REVEAL", 0x10: "MESSAGE", 0x11: "STREAM_OPEN", 0x12: "STREAM_DATA",
    0x13: "STREAM_END", 0x14: "RESET", 0x15: "CREDIT", 0x20: "OFFER", 0x21: "OFFER_ACCEPT",
    0x22: "CHUNK", 0x23: "FILE_END", 0x24: "FILE_ACK",
}
SKIP = 0xFFFFFFFFFFFFFFFF
# Terminal control sequences a peer must never get onto a screen: set the window title, move
# the cursor up and erase the line, colour, and a bidirectional override.
ESCAPES = "\x1b]0;pwned\x07\x1b[1A\x1b[2K\x1b[31mRED\x1b[0m\u202eexe.txt"


def report(**fields):
    """One observation, as a JSON line."""
    print(json.dumps(fields), flush=True)


# --- Encoding (PROTOCOL.md §3-§8) -------------------------------------------------------------

def frame(kind, channel=0, payload=b""):
    return struct.pack(">IBI", 5 + len(payload), kind, channel) + payload


def text(value, limit=1024):
    data = value.encode() if isinstance(value, str) else value
    data = data[:limit]
    return struct.pack(">H", len(data)) + data


# The protocol version spoken (PROTOCOL.md §5: the only one).
VERSION = 4


def hello(name, versions=(VERSION,)):
    data = name.encode() if isinstance(name, str) else name
    return frame(HELLO, 0, struct.pack(">H", len(versions))
                 + b"".join(struct.pack(">H", v) for v in versions)
                 + struct.pack(">B", len(data)) + data)


def invite(timeout_ms, nonce, context):
    return frame(INVITE, 0, struct.pack(">I", timeout_ms) + nonce
                 + struct.pack(">I", len(context)) + context)


# --- The verification code (PROTOCOL.md §6) ----------------------------------------------------

EXPORTER_LABEL = b"EXPORTER-ferry verification code"


def expand_label(secret, label, context, length, digest):
    """HKDF-Expand-Label of RFC 8446 §7.1 (HKDF-Expand of RFC 5869, with HMAC)."""
    full = b"tls13 " + label
    info = struct.pack(">HB", length, len(full)) + full + struct.pack(">B", len(context)) + context
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(secret, block + info + bytes([counter]), digest).digest()
        out, counter = out + block, counter + 1
    return out[:length]


def exporter(secret, label=EXPORTER_LABEL, length=32):
    """TLS-Exporter(label, "", length) of RFC 8446 §7.5, from the session's exporter secret (the
    key log's EXPORTER_SECRET: Python's ssl has no exporter of its own). The cipher suite's
    hash is SHA-384 when the secret is 48 bytes, else SHA-256."""
    digest = hashlib.sha384 if len(secret) == 48 else hashlib.sha256
    empty = digest(b"").digest()
    derived = expand_label(secret, label, empty, len(secret), digest)
    return expand_label(derived, b"exporter", empty, length, digest)


def exporter_secret(keylog):
    """The EXPORTER_SECRET in a key log file (one connection's), or None."""
    try:
        with open(keylog) as handle:
            for line in handle:
                fields = line.split()
                if len(fields) == 3 and fields[0] == "EXPORTER_SECRET":
                    return bytes.fromhex(fields[2])
    except OSError:
        pass
    return None


def verification_code(keying, inviter_nonce, advertiser_nonce, first, second):
    """SHA-256("ferry verification code v4" || keying || inviter nonce || advertiser nonce ||
    lower fingerprint || higher fingerprint), its first 8 bytes mod 10^6, as six digits."""
    low, high = sorted([first, second])
    digest = hashlib.sha256(b"ferry verification code v4" + keying + inviter_nonce
                            + advertiser_nonce + low + high).digest()
    return "%06d" % (int.from_bytes(digest[:8], "big") % 10**6)


def offer(channel, files):
    """files: (path bytes or str, size, mtime seconds, nanoseconds, mode)."""
    parts = [struct.pack(">I", len(files))]
    for path, size, seconds, nanos, mode in files:
        data = path.encode() if isinstance(path, str) else path
        parts.append(struct.pack(">H", len(data)) + data)
        parts.append(struct.pack(">QqII", size, seconds, nanos, mode))
    return frame(OFFER, channel, b"".join(parts))


def chunk(channel, index, data):
    return frame(CHUNK, channel, struct.pack(">I", index) + data)


def file_end(channel, index, digest):
    return frame(FILE_END, channel, struct.pack(">I", index) + digest)


def summary(files, size, names, roots=None, hidden=0):
    """The invitation context `ferry send` uses (an offer summary, JSON): the file count, the
    total size, the first five names, every top-level entry (by default those of `names`) and
    how many files are hidden."""
    if roots is None:
        roots = list(dict.fromkeys(name.split("/")[0] for name in names))
    return json.dumps({"files": files, "bytes": size, "names": names, "roots": roots,
                       "hidden": hidden}).encode()


# --- A connection ------------------------------------------------------------------------------

class Closed(Exception):
    """The other end closed the connection (or reset it)."""


class Link:
    """Frames over one TLS connection, and what its verification code is made of."""

    def __init__(self, sock, keylog=None, fingerprint=None):
        self.sock = sock
        self.buffer = b""
        # This end's nonce, the advertiser's commitment, and the code once both nonces are known.
        self.nonce = os.urandom(32)
        self.commitment = None
        self.code = None
        # A GOODBYE or DECLINE that came instead of the COMMIT (the HELLO was refused).
        self.early = None
        secret = exporter_secret(keylog) if keylog else None
        if keylog:
            try:
                os.unlink(keylog)
            except OSError:
                pass
        self.keying = exporter(secret) if secret else None
        peer = sock.getpeercert(binary_form=True)
        self.fingerprints = None
        if fingerprint and peer:
            self.fingerprints = (bytes.fromhex(fingerprint), hashlib.sha256(peer).digest())

    def send(self, data):
        self.sock.sendall(data)

    def invite(self, timeout_ms, context):
        """INVITE with this end's nonce (after the advertiser's COMMIT)."""
        self.send(invite(timeout_ms, self.nonce, context))

    def derive(self, inviter_nonce, advertiser_nonce):
        """The code, when the keying material and both fingerprints are known (else None)."""
        if self.keying and self.fingerprints:
            self.code = verification_code(self.keying, inviter_nonce, advertiser_nonce,
                                          *self.fingerprints)
        return self.code

    def frame(self, timeout=10.0):
        """The next frame (type, channel, payload); Closed at the end; TimeoutError."""
        deadline = time.monotonic() + timeout
        while True:
            if len(self.buffer) >= 9:
                length, kind, channel = struct.unpack(">IBI", self.buffer[:9])
                end = 4 + length
                if len(self.buffer) >= end:
                    payload = self.buffer[9:end]
                    self.buffer = self.buffer[end:]
                    return kind, channel, payload
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no frame in time")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(1 << 20)
            except socket.timeout:
                raise TimeoutError("no frame in time")
            except (ssl.SSLError, ConnectionError, OSError) as error:
                raise Closed(str(error))
            if not data:
                raise Closed("end of stream")
            self.buffer += data

    def expect(self, kinds, timeout=10.0):
        """The next frame of one of `kinds`, answering PINGs and skipping CREDIT meanwhile;
        a GOODBYE or DECLINE that was not expected is returned too."""
        deadline = time.monotonic() + timeout
        while True:
            kind, channel, payload = self.frame(max(0.01, deadline - time.monotonic()))
            if kind == PING and PING not in kinds:
                self.send(frame(PONG, 0, payload))
                continue
            if kind == CREDIT and CREDIT not in kinds:
                continue
            if kind in kinds or kind in (GOODBYE, DECLINE):
                return kind, channel, payload

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def reason_of(kind, payload):
    """The code and reason text of a DECLINE, GOODBYE, RESET or FILE_ACK."""
    if kind == FILE_ACK:
        index, status = struct.unpack(">IB", payload[:5])
        (length,) = struct.unpack(">H", payload[5:7])
        return status, payload[7:7 + length].decode("utf-8", "replace")
    code = payload[0]
    (length,) = struct.unpack(">H", payload[1:3])
    return code, payload[3:3 + length].decode("utf-8", "replace")


def describe(kind, channel, payload):
    """A frame as a JSON-friendly dict."""
    out = {"frame": NAMES.get(kind, hex(kind)), "channel": channel}
    if kind in (DECLINE, GOODBYE, RESET, FILE_ACK):
        out["code"], out["reason"] = reason_of(kind, payload)
    if kind == OFFER_ACCEPT:
        (count,) = struct.unpack(">I", payload[:4])
        out["offsets"] = [struct.unpack(">Q", payload[4 + 8 * i:12 + 8 * i])[0]
                          for i in range(count)]
        rest = payload[4 + 8 * count:]
        if len(rest) >= 4:
            (held,) = struct.unpack(">I", rest[:4])
            out["held"] = [struct.unpack(">I", rest[4 + 4 * i:8 + 4 * i])[0]
                           for i in range(held)]
    return out


# --- Identity ----------------------------------------------------------------------------------

def identity(directory):
    """A self-signed P-256 certificate and key in `directory` (made with the openssl command),
    and the certificate's SHA-256 fingerprint."""
    os.makedirs(directory, exist_ok=True)
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    if not os.path.exists(cert):
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
             "-subj", "/CN=hostile"],
            check=True, capture_output=True)
    with open(cert) as handle:
        der = ssl.PEM_cert_to_DER_cert(handle.read())
    return cert, key, hashlib.sha256(der).hexdigest().upper()


# --- Attacking `ferry receive` (this side invites and sends) ---------------------------------

def keylog_file():
    """A fresh file for one connection's TLS key log (its EXPORTER_SECRET makes the code)."""
    handle, path = tempfile.mkstemp(prefix="hostile-keylog-")
    os.close(handle)
    return path


def tls_context(args, server):
    """A TLS 1.3 context with this peer's certificate and ALPN ferry/1 (a client checks no
    certificate: Ferry pins by fingerprint), and a fresh key log file its connection writes to:
    (context, key log path). One context per connection, so that each key log is its own."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    if not server:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(args.cert, args.key)
    context.set_alpn_protocols(["ferry/1"])
    keylog = keylog_file()
    context.keylog_filename = keylog
    return context, keylog


def connect(args, name=None, source=None):
    """TLS 1.3 with a client certificate and ALPN ferry/1, then the HELLOs and the
    advertiser's COMMIT (an INVITE waits for it)."""
    context, keylog = tls_context(args, server=False)
    raw = socket.create_connection(
        (args.host, args.port), timeout=10,
        source_address=(source, 0) if source else None)
    link = Link(context.wrap_socket(raw), keylog=keylog, fingerprint=args.fingerprint)
    link.send(hello(name if name is not None else args.name, versions(args)))
    kind, _, _ = link.expect({HELLO})
    if kind != HELLO:
        raise Closed("no HELLO")
    kind, channel, payload = link.expect({COMMIT})
    if kind == COMMIT:
        link.commitment = payload
    else:
        link.early = (kind, channel, payload)
    return link


def versions(args):
    """The protocol versions this side offers in its HELLO (--versions, e.g. 1,2)."""
    return tuple(int(version) for version in args.versions.split(","))


def invited(args, context=None, timeout_ms=30000, name=None, source=None, wait=60.0):
    """Connects and invites; returns (link, answer frame as a dict). The answer carries the
    verification code (`verification`), from the REVEAL that precedes it, checked against the
    COMMIT (`revealed`: whether it matched; None without a REVEAL)."""
    link = connect(args, name=name, source=source)
    if link.early:
        answer = describe(*link.early)
        answer.update(verification=None, revealed=None)
        return link, answer
    if context is None:
        context = summary(1, 10, ["a.txt"])
    link.invite(timeout_ms, context)
    kind, channel, payload = link.expect({REVEAL}, timeout=wait)
    revealed = None
    if kind == REVEAL:
        revealed = hashlib.sha256(payload).digest() == link.commitment
        link.derive(link.nonce, payload)
        kind, channel, payload = link.expect({ACCEPT, DECLINE}, timeout=wait)
    answer = describe(kind, channel, payload)
    answer.update(verification=link.code, revealed=revealed)
    return link, answer


def send_file(link, channel, index, data, digest=None):
    """A file's chunks (256 KiB each) and its FILE_END."""
    for start in range(0, len(data), 256 << 10):
        link.send(chunk(channel, index, data[start:start + (256 << 10)]))
    link.send(file_end(channel, index, digest or hashlib.sha256(data).digest()))


def send_zeros(link, channel, index, size):
    """`size` zero bytes of file `index` as CHUNKs, within the channel's credit (its 8 MiB
    window, then what CREDIT frames grant), answering PINGs; then its FILE_END (SHA-256)."""
    piece, digest = b"\0" * (256 << 10), hashlib.sha256()
    credit, sent = 8 << 20, 0
    while sent < size:
        data = piece[:min(len(piece), size - sent)]
        while credit < 4 + len(data):
            kind, got, payload = link.frame(30)
            if kind == PING:
                link.send(frame(PONG, 0, payload))
            elif kind == CREDIT and got == channel:
                credit += struct.unpack(">I", payload[:4])[0]
            elif kind in (RESET, GOODBYE):
                raise Closed("%s while sending" % NAMES[kind])
        link.send(chunk(channel, index, data))
        credit -= 4 + len(data)
        digest.update(data)
        sent += len(data)
    link.send(file_end(channel, index, digest.digest()))


def offer_one(link, channel, path, data, mtime=1_700_000_000, mode=0o644, digest=None):
    """Offers one file on `channel`; sends it if accepted; returns what happened."""
    link.send(offer(channel, [(path, len(data), mtime, 0, mode)]))
    kind, got, payload = link.expect({OFFER_ACCEPT, RESET})
    answer = describe(kind, got, payload)
    if kind != OFFER_ACCEPT:
        return answer
    offset = answer["offsets"][0]
    if offset != SKIP:
        for start in range(offset, len(data), 256 << 10):
            link.send(chunk(channel, 0, data[start:start + (256 << 10)]))
        link.send(file_end(channel, 0, digest or hashlib.sha256(data).digest()))
        kind, got, payload = link.expect({FILE_ACK, RESET})
        answer["ack"] = describe(kind, got, payload)
    return answer


def report_reset(link, seconds, event="ended", **fields):
    """Stays silent (answering PINGs) until the other end sends RESET, for at most `seconds`;
    reports it and after how long (`after`: None when none came)."""
    started = time.monotonic()
    try:
        kind, got, payload = link.expect({RESET}, timeout=seconds)
        report(event=event, after=round(time.monotonic() - started, 1), **fields,
               **describe(kind, got, payload))
    except TimeoutError:
        report(event=event, after=None, **fields)


def scenario_paths(args):
    """Offers one file per path (hex-encoded bytes in --paths), each on its own channel of one
    accepted connection; reports each answer. A path that closes the connection (invalid
    UTF-8 is a protocol error) is reported as such, and the next path reconnects."""
    link, answer = invited(args)
    report(event="answer", **answer)
    channel = 1
    for hex_path in args.paths.split(","):
        path = bytes.fromhex(hex_path)
        try:
            result = offer_one(link, channel, path, b"pwned by a hostile peer\n")
        except Closed as error:
            result = {"closed": str(error)}
            link, _ = invited(args)
            channel = -1
        report(event="path", path=hex_path, **result)
        channel += 2
    link.send(frame(GOODBYE, 0, b"\x00" + text("done")))


def scenario_invite(args):
    """Invites with the raw context in --context (hex) and the timeout in --timeout-ms;
    reports the answer, then stays connected for --hold seconds."""
    link, answer = invited(
        args, context=bytes.fromhex(args.context), timeout_ms=args.timeout_ms, name=args.name)
    report(event="answer", **answer)
    time.sleep(args.hold)
    link.close()


def scenario_sizes(args):
    """After an accepted invitation, offers files of the sizes in --sizes (and mtime
    --mtime); reports how the receiver answers (a protocol error closes the connection)."""
    link, answer = invited(args)
    report(event="answer", **answer)
    sizes = [int(size) for size in args.sizes.split(",")] * args.count
    files = [("big%d" % i, size, args.mtime, 0, 0o644) for i, size in enumerate(sizes)]
    link.send(offer(1, files))
    try:
        kind, channel, payload = link.expect({OFFER_ACCEPT, RESET})
        report(event="offer", **describe(kind, channel, payload))
    except (Closed, TimeoutError) as error:
        report(event="offer", closed=str(error))


def scenario_consent(args):
    """Announces 1 file of 10 bytes (a.txt), then offers what --files says (N files of
    --size bytes); with --first-matching, first offers exactly a.txt (10 bytes) and then the
    rest as a second offer; the invitation waits --timeout-ms for its answer. Reports every
    answer and how many files were acknowledged."""
    link, answer = invited(
        args, context=summary(1, 10, ["a.txt"]), timeout_ms=args.timeout_ms, wait=args.wait)
    report(event="answer", **answer)
    if answer["frame"] != "ACCEPT":
        return
    channel = 1
    if args.first_matching:
        report(event="first", **offer_one(link, channel, "a.txt", b"0123456789"))
        channel += 2
    data = b"x" * args.size
    files = [("file%03d.bin" % i, len(data), 1_700_000_000, 0, 0o644) for i in range(args.files)]
    link.send(offer(channel, files))
    kind, got, payload = link.expect({OFFER_ACCEPT, RESET}, timeout=args.wait)
    result = describe(kind, got, payload)
    report(event="offer", **result)
    if kind != OFFER_ACCEPT:
        return
    for index in range(args.files):
        send_file(link, channel, index, data)
    acknowledged = 0
    while acknowledged < args.files:
        kind, got, payload = link.expect({FILE_ACK, RESET}, timeout=args.wait)
        if kind != FILE_ACK:
            report(event="stopped", **describe(kind, got, payload))
            break
        acknowledged += 1
    report(event="acknowledged", files=acknowledged)


def scenario_hidden(args):
    """Announces files that hide one more behind "… and N more": --variant short lists fewer
    names than it could (2 files, 1 name); --variant hidden lists five names and their
    top-level entries, and then offers a sixth file, .config/autostart/x.desktop. Reports the
    answer to the offer (a receiver that asks again and is told no answers RESET)."""
    if args.variant == "short":
        files = [("a.txt", 10), ("b/.bashrc", 10)]
        context = summary(2, 20, ["a.txt"], roots=["a.txt", "b"], hidden=1)
    else:
        files = [("a%d.txt" % i, 10) for i in range(5)] + [(".config/autostart/x.desktop", 10)]
        context = summary(6, 60, [p for p, _ in files[:5]])
    link, answer = invited(args, context=context, wait=args.wait)
    report(event="answer", **answer)
    if answer["frame"] != "ACCEPT":
        return
    link.send(offer(1, [(p, n, 1_700_000_000, 0, 0o644) for p, n in files]))
    kind, got, payload = link.expect({OFFER_ACCEPT, RESET}, timeout=args.wait)
    report(event="offer", **describe(kind, got, payload))


def scenario_withdraw(args):
    """--count times: connects, invites with a 60 KiB context, withdraws (CANCEL) and hangs
    up, while an earlier invitation holds the receiver's prompt. Reports how many went."""
    context = summary(1, 1, ["w.txt"]) + b" " * (60 << 10)
    done = 0
    for index in range(args.count):
        try:
            link = connect(args, name="%s-%d" % (args.name, index))
            link.invite(30000, context)
            link.send(frame(CANCEL))
            time.sleep(0.01)
            link.close()
            done += 1
        except (Closed, TimeoutError, OSError) as error:
            report(event="failed", index=index, reason=str(error))
    report(event="withdrawn", count=done)


def scenario_stall(args):
    """Offers one file of --size bytes, and once it is accepted sends nothing more, answering
    PINGs (so the link stays alive) for --seconds; reports the RESET or GOODBYE it gets."""
    link, answer = invited(args)
    report(event="answer", **answer)
    if answer["frame"] != "ACCEPT":
        return
    link.send(offer(1, [("stalled.bin", args.size, 1_700_000_000, 0, 0o644)]))
    kind, got, payload = link.expect({OFFER_ACCEPT, RESET})
    report(event="offer", **describe(kind, got, payload))
    report_reset(link, args.seconds)


def scenario_held_stall(args):
    """Places held.bin (--size zero bytes) with a first offer, so that the receiver holds it
    from this sender, then offers it again with other.bin (--sizes bytes)
    and, once that offer is accepted with held.bin held, sends nothing more (answering PINGs)
    for --seconds; reports the RESET or GOODBYE it gets and when."""
    link, answer = invited(args)
    report(event="answer", **answer)
    if answer["frame"] != "ACCEPT":
        return
    entry = ("held.bin", args.size, 1_700_000_000, 0, 0o644)
    link.send(offer(1, [entry]))
    kind, got, payload = link.expect({OFFER_ACCEPT, RESET})
    if kind != OFFER_ACCEPT:
        report(event="first", **describe(kind, got, payload))
        return
    send_zeros(link, 1, 0, args.size)
    kind, got, payload = link.expect({FILE_ACK, RESET}, timeout=60)
    report(event="first", **describe(kind, got, payload))
    link.send(offer(3, [entry, ("other.bin", int(args.sizes), 1_700_000_000, 0, 0o644)]))
    kind, got, payload = link.expect({OFFER_ACCEPT, RESET})
    report(event="offer", **describe(kind, got, payload))
    if kind != OFFER_ACCEPT:
        return
    report_reset(link, args.seconds)


def scenario_streams(args):
    """Opens --count streams and sends --size bytes on each without ending them (a receiver
    that never reads them); reports RESETs and whether the connection was closed."""
    link, answer = invited(args)
    report(event="answer", **answer)
    resets, closed = 0, None
    try:
        for index in range(args.count):
            channel = 1 + 2 * index
            link.send(frame(STREAM_OPEN, channel, text("stream%d" % index)))
            sent = 0
            while sent < args.size:
                piece = min(256 << 10, args.size - sent)
                link.send(frame(STREAM_DATA, channel, b"s" * piece))
                sent += piece
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            kind, _, payload = link.expect({RESET}, timeout=deadline - time.monotonic())
            if kind == GOODBYE:
                closed = reason_of(kind, payload)[1]
                break
            resets += 1
    except (Closed, TimeoutError, OSError) as error:
        closed = closed or str(error)
    report(event="streams", resets=resets, closed=closed)


def scenario_offers(args):
    """Offers --count offers of --files empty-named files each, and never sends a byte of
    them (offers accepted but never finished); reports how the receiver answers."""
    link, answer = invited(args)
    report(event="answer", **answer)
    accepted, closed = 0, None
    try:
        for index in range(args.count):
            channel = 1 + 2 * index
            files = [("o%d/f%06d" % (index, i), 1, 1_700_000_000, 0, 0o644)
                     for i in range(args.files)]
            link.send(offer(channel, files))
            kind, _, payload = link.expect({OFFER_ACCEPT, RESET}, timeout=30)
            if kind == GOODBYE:
                closed = reason_of(kind, payload)[1]
                break
            if kind == OFFER_ACCEPT:
                accepted += 1
    except (Closed, TimeoutError, OSError) as error:
        closed = closed or str(error)
    report(event="offers", accepted=accepted, closed=closed)


def scenario_ping_flood(args):
    """Sends PINGs as fast as it can and never reads the PONGs, for --seconds seconds or until
    the receiver gives up on it; reports how many were sent and whether it was cut off."""
    link, answer = invited(args)
    report(event="answer", **answer)
    sent, cut = 0, None
    ping = frame(PING, 0, struct.pack(">Q", 7)) * 256
    deadline = time.monotonic() + args.seconds
    link.sock.settimeout(5)
    try:
        while time.monotonic() < deadline:
            link.sock.sendall(ping)
            sent += 256
    except (OSError, ssl.SSLError) as error:
        cut = str(error)
    report(event="flood", pings=sent, cut=cut)


def scenario_slots(args):
    """Opens --count connections from --source (an address of this host), each with an
    INVITE of timeout --timeout-ms; reports each answer (pending after 1 s; the last one, a
    busy DECLINE beyond the host's slots, is given 10 s, what a loaded machine may take) and
    keeps them open --hold seconds."""
    links = []
    for index in range(args.count):
        link = connect(args, name="%s-%d" % (args.name, index), source=args.source)
        link.invite(args.timeout_ms, summary(1, 1, ["slot.txt"]))
        wait = 10.0 if index == args.count - 1 else 1.0
        try:
            kind, channel, payload = link.expect({ACCEPT, DECLINE}, timeout=wait)
            report(event="answer", index=index, **describe(kind, channel, payload))
        except TimeoutError:
            report(event="answer", index=index, pending=True)
        links.append(link)
    time.sleep(args.hold)
    for link in links:
        link.close()


def scenario_churn(args):
    """Opens --count connections one after another: every other one invites and waits for the
    answer, the rest hang up right after HELLO. A receiver must end up holding nothing."""
    done = 0
    for index in range(args.count):
        try:
            if index % 2:
                link, _ = invited(args, summary(1, 1, ["churn.txt"]), wait=10.0)
            else:
                link = connect(args)
            link.close()
            done += 1
        except (Closed, TimeoutError, OSError):
            pass
    report(event="churned", connections=done)


def scenario_twin(args):
    """Two offers of the same path, size and time at once: the first is sent whole and
    acknowledged; then the second sends other bytes. Reports both acks and the digests."""
    link, answer = invited(args)
    report(event="answer", **answer)
    first, second = b"A" * (3 << 20), b"B" * (3 << 20)
    entry = [("twin.bin", len(first), 1_700_000_000, 0, 0o644)]
    link.send(offer(1, entry))
    link.send(offer(3, entry))
    answers = {}
    while len(answers) < 2:
        kind, channel, payload = link.expect({OFFER_ACCEPT, RESET})
        answers[channel] = describe(kind, channel, payload)
    report(event="offers", answers=list(answers.values()))
    send_file(link, 1, 0, first)
    kind, channel, payload = link.expect({FILE_ACK})
    report(event="first", sha256=hashlib.sha256(first).hexdigest(),
           **describe(kind, channel, payload))
    send_file(link, 3, 0, second)
    kind, channel, payload = link.expect({FILE_ACK, RESET})
    report(event="second", sha256=hashlib.sha256(second).hexdigest(),
           **describe(kind, channel, payload))
    link.send(frame(GOODBYE, 0, b"\x00" + text("done")))


def scenario_reasons(args):
    """Reasons full of terminal control sequences: a RESET of an offer under way, then a
    GOODBYE."""
    link, answer = invited(args)
    report(event="answer", **answer)
    link.send(offer(1, [("reasons.bin", 1 << 20, 1_700_000_000, 0, 0o644)]))
    link.expect({OFFER_ACCEPT})
    link.send(chunk(1, 0, b"r" * 1000))
    link.send(frame(RESET, 1, b"\x02" + text("reset " + ESCAPES)))
    time.sleep(0.5)
    link.send(frame(GOODBYE, 0, b"\x00" + text("goodbye " + ESCAPES)))
    report(event="sent")
    time.sleep(0.5)


def scenario_corrupt(args):
    """One file whose FILE_END carries the wrong SHA-256."""
    link, answer = invited(args)
    report(event="answer", **answer)
    result = offer_one(link, 1, "corrupt.bin", b"c" * 5000, digest=b"\x00" * 32)
    report(event="file", **result)


def scenario_mode(args):
    """One file with mode 0o777 (rwx for everyone) and one with setuid bits."""
    link, answer = invited(args)
    report(event="answer", **answer)
    report(event="file", **offer_one(link, 1, "open.sh", b"#!/bin/sh\n", mode=0o777))
    report(event="file", **offer_one(link, 3, "setuid.sh", b"#!/bin/sh\n", mode=0o6777))


def scenario_early_frame(args):
    """Before any invitation is answered, the header of a 16 MiB OFFER (no payload): the
    receiver must close at once rather than buffer it."""
    link = connect(args)
    link.invite(30000, summary(1, 1, ["x"]))
    started = time.monotonic()
    link.send(struct.pack(">IBI", 5 + (16 << 20), OFFER, 1))
    try:
        kind, channel, payload = link.expect({ACCEPT}, timeout=20)
        report(event="answer", seconds=time.monotonic() - started,
               **describe(kind, channel, payload))
    except (Closed, TimeoutError) as error:
        report(event="answer", seconds=time.monotonic() - started, closed=str(error))


# --- Attacking `ferry send` (this side receives) ---------------------------------------------

def scenario_replay(args):
    """One approval spent many times? Announces three files (a.txt, b.txt, c.txt, --size bytes
    each) and, for --count rounds, offers all three with new content (a new mtime, so none is
    the receiver's copy), sends a.txt and b.txt whole and then fails the part before c.txt:
    --variant drop closes the connection and comes back with the same invitation (same key,
    name and summary); --variant stall goes silent on the same link, answering PINGs, until the
    receiver resets the part as stalled, and offers again on a new channel of it. Reports each
    round's answer and acknowledgements, and how many files were acknowledged stored."""
    names = ["a.txt", "b.txt", "c.txt"]
    context = summary(3, 3 * args.size, names)
    stored = 0
    link = None
    channel = 1
    for round_number in range(args.count):
        if link is None:
            link, answer = invited(args, context=context, wait=args.wait)
            report(event="answer", round=round_number, **answer)
            if answer["frame"] != "ACCEPT":
                break
            channel = 1
        data = bytes([round_number % 256]) * args.size
        mtime = 1_700_000_000 + 1000 * (round_number + 1)
        link.send(offer(channel, [(name, len(data), mtime, 0, 0o644) for name in names]))
        kind, got, payload = link.expect({OFFER_ACCEPT, RESET}, timeout=args.wait)
        result = describe(kind, got, payload)
        if kind != OFFER_ACCEPT:
            report(event="offer", round=round_number, **result)
            if args.variant == "drop":
                link.close()
                link = None
            channel += 2
            continue
        acks = []
        for index in (0, 1):
            if result["offsets"][index] != SKIP:
                send_file(link, channel, index, data)
        expected = sum(1 for index in (0, 1) if result["offsets"][index] != SKIP)
        while len(acks) < expected:
            kind, got, payload = link.expect({FILE_ACK, RESET}, timeout=args.wait)
            if kind != FILE_ACK:
                break
            acks.append(reason_of(kind, payload)[0])
        stored += sum(1 for status in acks if status == 0)
        report(event="round", round=round_number, offsets=result["offsets"], acks=acks)
        if round_number == args.count - 1:
            break
        if args.variant == "drop":
            link.close()
            link = None
            time.sleep(0.5)
        else:
            report_reset(link, args.seconds, event="reset", round=round_number)
            channel += 2
    report(event="stored", files=stored)


def serve(args, handle):
    """Listens on 127.0.0.1 (--port, or any), prints `listening` with the port and the
    certificate's fingerprint, accepts one connection, does the handshake and calls
    `handle(link, context)` after the INVITE."""
    context, keylog = tls_context(args, server=True)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(4)
    report(event="listening", port=listener.getsockname()[1], fingerprint=args.fingerprint)
    # --connections N: the same answer to N connections in turn (a sender that retries);
    # args.attempt counts them from 1.
    for attempt in range(1, args.connections + 1):
        args.attempt = attempt
        listener.settimeout(args.seconds if attempt > 1 else None)
        try:
            raw, _ = listener.accept()
        except socket.timeout:
            report(event="no-more-attempts", attempts=attempt - 1)
            break
        try:
            # Python's server cannot take a client certificate without a CA to check it
            # against, so the sender's fingerprint is not known here: --peer-fingerprint names
            # it when a test wants the code.
            link = Link(context.wrap_socket(raw, server_side=True), keylog=keylog,
                        fingerprint=args.fingerprint)
            if args.peer_fingerprint:
                link.fingerprints = (bytes.fromhex(args.fingerprint),
                                     bytes.fromhex(args.peer_fingerprint))
            link.send(hello(args.name, versions(args)))
            kind, _, payload = link.expect({HELLO})
            # Committed to before the INVITE shows the sender's nonce; revealed after it.
            link.send(frame(COMMIT, 0, hashlib.sha256(link.nonce).digest()))
            kind, _, payload = link.expect({INVITE})
            (timeout,) = struct.unpack(">I", payload[:4])
            nonce = payload[4:36]
            (length,) = struct.unpack(">I", payload[36:40])
            link.send(frame(REVEAL, 0, link.nonce))
            report(event="invited", attempt=attempt, timeout_ms=timeout,
                   context=payload[40:40 + length].decode("utf-8", "replace"),
                   verification=link.derive(nonce, link.nonce))
            handle(link, args)
        except (Closed, TimeoutError, OSError, ssl.SSLError) as error:
            report(event="closed", reason=str(error))
        if attempt < args.connections:
            link.close()
    time.sleep(args.hold)


def receive_offer(link):
    """The next OFFER: (channel, [(path, size)])."""
    kind, channel, payload = link.expect({OFFER}, timeout=30)
    (count,) = struct.unpack(">I", payload[:4])
    position, files = 4, []
    for _ in range(count):
        (length,) = struct.unpack(">H", payload[position:position + 2])
        path = payload[position + 2:position + 2 + length].decode()
        position += 2 + length
        size, _, _, _ = struct.unpack(">QqII", payload[position:position + 24])
        position += 24
        files.append((path, size))
    report(event="offer", files=[{"path": p, "size": s} for p, s in files])
    return channel, files


def accept_all(link, channel, files):
    link.send(frame(OFFER_ACCEPT, channel, struct.pack(">I", len(files))
                    + b"".join(struct.pack(">Q", 0) for _ in files)))


def serve_decline(link, args):
    link.send(frame(DECLINE, 0, b"\x00" + text("declined " + ESCAPES)))


def serve_goodbye(link, args):
    link.send(frame(ACCEPT))
    receive_offer(link)
    link.send(frame(GOODBYE, 0, b"\x00" + text("goodbye " + ESCAPES)))


def serve_refuse(link, args):
    link.send(frame(ACCEPT))
    channel, _ = receive_offer(link)
    link.send(frame(RESET, channel, b"\x01" + text("refused " + ESCAPES)))


def serve_bad_ack(link, args):
    link.send(frame(ACCEPT))
    channel, files = receive_offer(link)
    accept_all(link, channel, files)
    ends = 0
    while ends < len(files):
        kind, got, payload = link.expect({CHUNK, FILE_END}, timeout=30)
        if kind == FILE_END:
            (index,) = struct.unpack(">I", payload[:4])
            link.send(frame(FILE_ACK, channel, struct.pack(">IB", index, 2)
                            + text("failed " + ESCAPES)))
            ends += 1


def serve_bad_accept(link, args):
    link.send(frame(ACCEPT))
    channel, files = receive_offer(link)
    # More offsets than files, each beyond its file's end.
    link.send(frame(OFFER_ACCEPT, channel, struct.pack(">I", len(files) + 1)
                    + b"".join(struct.pack(">Q", 1 << 60) for _ in range(len(files) + 1))))


def serve_twice(link, args):
    """Answers the offer twice (--variant accept), or acknowledges the first file twice
    (--variant ack), or before accepting (--variant early), or asks for a file it never said
    it held (--variant differs); reports the GOODBYE the sender then closes the link with."""
    link.send(frame(ACCEPT))
    channel, files = receive_offer(link)
    if args.variant == "early":
        link.send(frame(FILE_ACK, channel, struct.pack(">IB", 0, 0) + text("")))
    accept_all(link, channel, files)
    if args.variant == "accept":
        accept_all(link, channel, files)
    while True:
        kind, _, payload = link.frame(30)
        if kind == FILE_END and args.variant == "ack":
            (index,) = struct.unpack(">I", payload[:4])
            for _ in range(2):
                link.send(frame(FILE_ACK, channel, struct.pack(">IB", index, 0) + text("")))
        if kind == FILE_END and args.variant == "differs":
            # "Send it whole" for a file this receiver never said it held.
            (index,) = struct.unpack(">I", payload[:4])
            link.send(frame(FILE_ACK, channel, struct.pack(">IB", index, 5) + text("")))
        if kind == GOODBYE:
            report(event="goodbye", reason=reason_of(kind, payload)[1])
            return


def serve_credit_overflow(link, args):
    link.send(frame(ACCEPT))
    channel, files = receive_offer(link)
    accept_all(link, channel, files)
    for _ in range(64):
        link.send(frame(CREDIT, channel, struct.pack(">I", 0xFFFFFFFF)))
    report(event="credited")
    while True:
        kind, _, payload = link.frame(30)
        if kind == GOODBYE:
            report(event="goodbye", reason=reason_of(kind, payload)[1])
            return


def serve_no_read(link, args):
    """Grants a gigabyte of credit and then reads nothing for --hold seconds."""
    link.send(frame(ACCEPT))
    channel, files = receive_offer(link)
    accept_all(link, channel, files)
    for _ in range(4):
        link.send(frame(CREDIT, channel, struct.pack(">I", 250 << 20)))
    report(event="stalled")


def serve_stall(link, args):
    """Accepts the offer, then reads everything and answers nothing (no CREDIT, no FILE_ACK),
    answering PINGs so the link stays alive; reports the RESET the sender sends."""
    link.send(frame(ACCEPT))
    channel, files = receive_offer(link)
    accept_all(link, channel, files)
    started = time.monotonic()
    kind, got, payload = link.expect({RESET}, timeout=args.seconds)
    report(event="reset", after=round(time.monotonic() - started, 1),
           **describe(kind, got, payload))


def serve_held(link, args):
    """Accepts the offer calling every file held , then reads everything
    and answers nothing (no CREDIT, no FILE_ACK), answering PINGs; reports the RESET the
    sender sends and how long after the OFFER_ACCEPT."""
    link.send(frame(ACCEPT))
    channel, files = receive_offer(link)
    link.send(frame(OFFER_ACCEPT, channel, struct.pack(">I", len(files))
                    + b"".join(struct.pack(">Q", 0) for _ in files)
                    + struct.pack(">I", len(files))
                    + b"".join(struct.pack(">I", index) for index in range(len(files)))))
    started = time.monotonic()
    kind, got, payload = link.expect({RESET}, timeout=args.seconds)
    report(event="reset", after=round(time.monotonic() - started, 1),
           **describe(kind, got, payload))


def serve_fake_progress(link, args):
    """Faked progress against `--retry-for`: accepts the offer saying it holds one byte more of
    each file than on the attempt before (attempt N: N bytes), reads nothing, and drops the
    connection after a moment, so that the sender retries. Reports each attempt."""
    link.send(frame(ACCEPT))
    channel, files = receive_offer(link)
    link.send(frame(OFFER_ACCEPT, channel, struct.pack(">I", len(files))
                    + b"".join(struct.pack(">Q", min(args.attempt, size)) for _, size in files)))
    time.sleep(0.2)
    report(event="attempt", attempt=args.attempt, offset=args.attempt)
    link.close()


def serve_capture_reset(link, args):
    """Accepts the offer only once the file --wait-for exists (the test changes the sender's
    file meanwhile); reports the RESET the sender then sends."""
    link.send(frame(ACCEPT))
    channel, files = receive_offer(link)
    deadline = time.monotonic() + 30
    while not os.path.exists(args.wait_for) and time.monotonic() < deadline:
        time.sleep(0.05)
    accept_all(link, channel, files)
    while True:
        kind, got, payload = link.expect({RESET, CHUNK, FILE_END}, timeout=30)
        if kind in (RESET, GOODBYE):
            report(event="reset", **describe(kind, got, payload))
            return


SCENARIOS = {
    "paths": scenario_paths, "invite": scenario_invite, "sizes": scenario_sizes,
    "consent": scenario_consent, "streams": scenario_streams, "offers": scenario_offers,
    "ping-flood": scenario_ping_flood, "slots": scenario_slots, "churn": scenario_churn,
    "twin": scenario_twin,
    "reasons": scenario_reasons, "corrupt": scenario_corrupt, "mode": scenario_mode,
    "early-frame": scenario_early_frame, "hidden": scenario_hidden,
    "withdraw": scenario_withdraw, "stall": scenario_stall, "replay": scenario_replay,
    "held-stall": scenario_held_stall,
}
SERVES = {
    "decline": serve_decline, "goodbye": serve_goodbye, "refuse": serve_refuse,
    "bad-ack": serve_bad_ack, "bad-accept": serve_bad_accept,
    "credit-overflow": serve_credit_overflow, "no-read": serve_no_read,
    "capture-reset": serve_capture_reset, "stall": serve_stall, "twice": serve_twice,
    "held": serve_held, "fake-progress": serve_fake_progress,
}


def relay(args):
    """A man in the middle that relays two TLS sessions (`relay TARGET-PORT`): it listens like
    `serve` (its own key toward the sender) and, for each of --connections connections, opens
    one to the receiver at 127.0.0.1:TARGET-PORT (its own key toward it, as an inviter). It
    forwards the nonces unchanged (the receiver's COMMIT to the sender, the sender's INVITE with
    its nonce and context to the receiver, the receiver's REVEAL to the sender), so that both
    sessions hash the same nonces, then every frame both ways until either end closes. Reports
    `relayed` with the code of each session (`sender_code`: --peer-fingerprint names the
    sender's key; `receiver_code`), the codes the two screens show."""
    import select
    target = int(args.rest[0])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(4)
    report(event="listening", port=listener.getsockname()[1], fingerprint=args.fingerprint)
    for attempt in range(1, args.connections + 1):
        toward_sender, keylog1 = tls_context(args, server=True)
        toward_receiver, keylog2 = tls_context(args, server=False)
        raw, _ = listener.accept()
        try:
            sender = Link(toward_sender.wrap_socket(raw, server_side=True), keylog=keylog1,
                          fingerprint=args.fingerprint)
            if args.peer_fingerprint:
                sender.fingerprints = (bytes.fromhex(args.fingerprint),
                                       bytes.fromhex(args.peer_fingerprint))
            receiver = Link(toward_receiver.wrap_socket(
                socket.create_connection(("127.0.0.1", target), timeout=10)), keylog=keylog2,
                fingerprint=args.fingerprint)
            receiver.send(hello(args.name))
            receiver.expect({HELLO})
            kind, _, commitment = receiver.expect({COMMIT})
            if kind != COMMIT:
                raise Closed("no COMMIT from the receiver")
            sender.send(hello(args.name))
            sender.expect({HELLO})
            sender.send(frame(COMMIT, 0, commitment))
            kind, _, invitation = sender.expect({INVITE})
            if kind != INVITE:
                raise Closed("no INVITE from the sender")
            nonce = invitation[4:36]
            receiver.send(frame(INVITE, 0, invitation))
            kind, _, revealed = receiver.expect({REVEAL}, timeout=args.wait)
            if kind != REVEAL:
                raise Closed("no REVEAL from the receiver")
            sender.send(frame(REVEAL, 0, revealed))
            report(event="relayed", attempt=attempt,
                   sender_code=sender.derive(nonce, revealed),
                   receiver_code=receiver.derive(nonce, revealed))
            # Everything else, both ways, as it comes (what the frame reader buffered first).
            pairs = {sender.sock: receiver.sock, receiver.sock: sender.sock}
            for link, other in ((sender, receiver), (receiver, sender)):
                if link.buffer:
                    other.sock.sendall(link.buffer)
                    link.buffer = b""
            for sock in pairs:
                sock.setblocking(False)
            open_ends = True
            while open_ends:
                ready = [sock for sock in pairs if sock.pending()]
                if not ready:
                    ready, _, _ = select.select(list(pairs), [], [], args.wait)
                    if not ready:
                        break
                for sock in ready:
                    try:
                        data = sock.recv(1 << 16)
                    except (ssl.SSLWantReadError, BlockingIOError):
                        continue
                    if not data:
                        open_ends = False
                        break
                    pairs[sock].setblocking(True)
                    pairs[sock].sendall(data)
                    pairs[sock].setblocking(False)
            report(event="closed", attempt=attempt)
            sender.close()
            receiver.close()
        except (Closed, TimeoutError, OSError, ssl.SSLError) as error:
            report(event="closed", attempt=attempt, reason=str(error))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["identity", "attack", "serve", "relay"])
    parser.add_argument("rest", nargs="*")
    parser.add_argument("--home", default=os.environ.get("HOSTILE_HOME", "/tmp/hostile-peer"))
    parser.add_argument("--name", default="hostile")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--paths", default="")
    parser.add_argument("--context", default="")
    parser.add_argument("--timeout-ms", type=int, default=30000)
    parser.add_argument("--hold", type=float, default=0.0)
    parser.add_argument("--sizes", default="1")
    parser.add_argument("--mtime", type=int, default=1_700_000_000)
    parser.add_argument("--files", type=int, default=55)
    parser.add_argument("--size", type=int, default=1 << 20)
    parser.add_argument("--first-matching", action="store_true")
    parser.add_argument("--wait", type=float, default=60.0)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--source", default=None)
    parser.add_argument("--wait-for", default="")
    parser.add_argument("--variant", default="")
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--versions", default="4")
    parser.add_argument("--peer-fingerprint", default="")
    args = parser.parse_args()
    args.cert, args.key, args.fingerprint = identity(args.home)
    if args.mode == "identity":
        report(event="identity", fingerprint=args.fingerprint, cert=args.cert, key=args.key)
    elif args.mode == "attack":
        args.host, args.port, scenario = args.rest[0], int(args.rest[1]), args.rest[2]
        if args.name == "hostile" and os.environ.get("HOSTILE_NAME"):
            args.name = os.environ["HOSTILE_NAME"]
        try:
            SCENARIOS[scenario](args)
        except (Closed, TimeoutError) as error:
            report(event="closed", reason=str(error))
    elif args.mode == "relay":
        relay(args)
    else:
        serve(args, SERVES[args.rest[0]])


if __name__ == "__main__":
    main()
