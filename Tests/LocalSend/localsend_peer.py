#!/usr/bin/env python3
"""An independent LocalSend test peer (protocol v2.2 as LocalSend 1.18 implements it,
plus the legacy v2.1 behaviour of apps <= 1.17).

Written from the protocol README (localsend/protocol) and LocalSend's own source
(localsend/localsend: packages/core for 1.18, the Dart app at v1.17.0 for legacy);
see README.md next to this file for which source each behaviour follows.

Standard library only; certificates are made with the `openssl` command.
Every event is printed as one JSON object per line on stdout.
"""

import argparse
import ctypes
import datetime
import fcntl
import hashlib
import http.client
import http.server
import json
import mimetypes
import os
import random
import select
import socket
import socketserver
import ssl
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

PROTOCOL_VERSION = "2.2"          # packages/core/src/model/discovery.rs PROTOCOL_VERSION_V2
LEGACY_PROTOCOL_VERSION = "2.1"   # common/lib/constants.dart @ v1.17.0
DEFAULT_PORT = 53317
MULTICAST_GROUP_V4 = "224.0.0.167"
MULTICAST_GROUP_V6 = "ff12::fd3a:e420"
ANNOUNCE_DELAYS = (0.1, 0.5, 2.0)  # packages/core/src/multicast/mod.rs ANNOUNCE_DELAYS
DISCOVERY_TIMEOUT = 0.5            # packages/core/src/discovery/mod.rs DEFAULT_DISCOVERY_TIMEOUT
MAX_PIN_ATTEMPTS = 3               # packages/core/src/http/server/common/pin.rs
MAX_UPLOAD_ATTEMPTS = 3            # packages/core/src/http/server/v2.rs
CHUNK = 64 * 1024
API = "/api/localsend/v2"
API_V1 = "/api/localsend/v1"
DEVICE_TYPES = ("mobile", "desktop", "web", "headless", "server")

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2


# --------------------------------------------------------------------------- output

_emit_lock = threading.Lock()


def emit(event, **fields):
    obj = {"event": event, "time": round(time.time(), 3)}
    obj.update(fields)
    line = json.dumps(obj, sort_keys=False, default=str)
    with _emit_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def finish(code):
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def fail_setup(reason, **fields):
    emit("error", reason=reason, **fields)
    finish(EXIT_USAGE)


def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


def fingerprint_of_der(der):
    # packages/core/src/crypto/cert.rs fingerprint_from_cert_der: upper-case hex SHA-256 of the DER
    return hashlib.sha256(der).hexdigest().upper()


# --------------------------------------------------------------------------- identity

OPENSSL_CONFIG = """[req]
distinguished_name = dn
prompt = no
x509_extensions = ext
[dn]
CN = LocalSend User
[ext]
subjectKeyIdentifier = hash
"""


class Identity:
    """RSA-2048 self-signed certificate in --home (made with `openssl req`, reused if present)."""

    def __init__(self, home):
        self.home = os.path.abspath(home)
        os.makedirs(self.home, exist_ok=True)
        self.cert_path = os.path.join(self.home, "cert.pem")
        self.key_path = os.path.join(self.home, "key.pem")
        if not (os.path.exists(self.cert_path) and os.path.exists(self.key_path)):
            self._generate()
        with open(self.cert_path) as f:
            self.cert_pem = f.read()
        self.cert_der = ssl.PEM_cert_to_DER_cert(self.cert_pem)
        self.fingerprint = fingerprint_of_der(self.cert_der)

    def _generate(self):
        cfg = os.path.join(self.home, "openssl.cnf")
        with open(cfg, "w") as f:
            f.write(OPENSSL_CONFIG)
        tmp_cert = self.cert_path + ".tmp%d" % os.getpid()
        tmp_key = self.key_path + ".tmp%d" % os.getpid()
        cmd = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256",
               "-days", "3650", "-config", cfg, "-keyout", tmp_key, "-out", tmp_cert]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            fail_setup("openssl-failed", stderr=res.stderr[-2000:])
        os.chmod(tmp_key, 0o600)
        os.replace(tmp_key, self.key_path)
        os.replace(tmp_cert, self.cert_path)
        emit("certificate-created", home=self.home)


# --------------------------------------------------------------------------- TLS

class _Libssl:
    """ctypes access to the libssl/libcrypto already loaded by Python's _ssl module.

    Needed because the stdlib `ssl` module cannot request a client certificate without
    also requiring it to chain to a CA; LocalSend 1.18 requests (and requires) a
    self-signed client certificate and accepts any that is valid in time and correctly
    self-signed (packages/core/src/http/server/common/client_cert_verifier.rs).
    """

    # X509_V_ERR_* codes that make the certificate itself invalid (as opposed to
    # "self-signed / unknown issuer", which LocalSend accepts).
    REJECT = {4: "unable to decrypt signature", 6: "bad public key", 7: "signature failure",
              9: "not yet valid", 10: "expired", 13: "bad notBefore", 14: "bad notAfter"}

    def __init__(self):
        self.ok = False
        self.error = None
        self.rejections = threading.local()
        try:
            ssl_path = crypto_path = None
            with open("/proc/self/maps") as f:
                for line in f:
                    parts = line.split()
                    if len(parts) < 6:
                        continue
                    base = os.path.basename(parts[-1])
                    if base.startswith("libssl.so") and not ssl_path:
                        ssl_path = parts[-1]
                    if base.startswith("libcrypto.so") and not crypto_path:
                        crypto_path = parts[-1]
            if not ssl_path or not crypto_path:
                raise OSError("libssl/libcrypto not found in /proc/self/maps")
            self.libssl = ctypes.CDLL(ssl_path)
            self.libcrypto = ctypes.CDLL(crypto_path)
            self.CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
            self.libssl.SSL_CTX_set_verify.argtypes = [ctypes.c_void_p, ctypes.c_int, self.CB]
            self.libssl.SSL_CTX_set_verify.restype = None
            self.libssl.SSL_CTX_get_verify_mode.argtypes = [ctypes.c_void_p]
            self.libssl.SSL_CTX_get_verify_mode.restype = ctypes.c_int
            self.libcrypto.X509_STORE_CTX_get_error.argtypes = [ctypes.c_void_p]
            self.libcrypto.X509_STORE_CTX_get_error.restype = ctypes.c_int
            self.callback = self.CB(self._verify)
            self.ok = True
        except Exception as e:  # noqa: BLE001
            self.error = str(e)

    def _verify(self, preverify_ok, store_ctx):
        if preverify_ok:
            return 1
        err = self.libcrypto.X509_STORE_CTX_get_error(store_ctx)
        if err in self.REJECT:
            emit("tls-client-cert-rejected", reason=self.REJECT[err], x509Error=err)
            return 0
        return 1

    def _ctx_ptr(self, ctx):
        ptr = ctypes.c_void_p.from_address(id(ctx) + object.__basicsize__).value
        # Sanity check that the pointer really is this context's SSL_CTX.
        ctx.verify_mode = ssl.CERT_OPTIONAL
        m1 = self.libssl.SSL_CTX_get_verify_mode(ptr)
        ctx.verify_mode = ssl.CERT_NONE
        m2 = self.libssl.SSL_CTX_get_verify_mode(ptr)
        if m1 != 1 or m2 != 0:
            raise OSError("could not locate SSL_CTX (verify modes %r/%r)" % (m1, m2))
        return ptr

    def request_any_client_cert(self, ctx, mandatory):
        if not self.ok:
            raise OSError(self.error)
        ptr = self._ctx_ptr(ctx)
        # X509_V_FLAG_CHECK_SS_SIGNATURE: also verify the signature of a self-signed leaf.
        ctx.verify_flags = int(ctx.verify_flags) | 0x4000
        mode = 0x01 | (0x02 if mandatory else 0)  # SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
        self.libssl.SSL_CTX_set_verify(ptr, mode, self.callback)


_LIBSSL = None


def server_tls_context(identity, client_cert):
    """client_cert: 'required' (1.18), 'optional' (1.18 with web pages), 'none' (<= 1.17)."""
    global _LIBSSL
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(identity.cert_path, identity.key_path)
    if client_cert != "none":
        if _LIBSSL is None:
            _LIBSSL = _Libssl()
        try:
            _LIBSSL.request_any_client_cert(ctx, client_cert == "required")
        except OSError as e:
            fail_setup("cannot-request-client-certificates", detail=str(e))
    return ctx


def client_tls_context(identity, present_cert, alpn):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # self-signed peers: identity is the pinned fingerprint
    if present_cert:
        ctx.load_cert_chain(identity.cert_path, identity.key_path)
    if alpn:
        ctx.set_alpn_protocols(["http/1.1"])  # packages/core/src/http/client/mod.rs
    return ctx


# --------------------------------------------------------------------------- HTTP client

class PinMismatch(Exception):
    def __init__(self, expected, actual):
        super().__init__("server certificate fingerprint mismatch: expected %s, got %s" % (expected, actual))
        self.expected = expected
        self.actual = actual


class Target:
    def __init__(self, host, port, protocol, pin=None):
        self.host = host          # IP, possibly "fe80::1%3"
        self.port = int(port)
        self.protocol = protocol  # "http" | "https"
        self.pin = pin            # expected certificate fingerprint or None

    def describe(self):
        h = "[%s]" % self.host if ":" in self.host else self.host
        return "%s://%s:%d" % (self.protocol, h, self.port)


def host_header(host, port):
    h = host.split("%", 1)[0]
    if ":" in h:
        h = "[%s]" % h
    return "%s:%d" % (h, port)


class Connection:
    """One HTTP/1.1 connection to a peer; TLS with certificate pinning when https."""

    def __init__(self, peer, target, timeout):
        self.target = target
        self.peer_fingerprint = None
        self.alpn = None
        self.tls_version = None
        sock = socket.create_connection((target.host, target.port), timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if target.protocol == "https":
                sock = peer.client_ctx.wrap_socket(sock, server_hostname=None)
                der = sock.getpeercert(binary_form=True)
                self.peer_fingerprint = fingerprint_of_der(der) if der else None
                self.alpn = sock.selected_alpn_protocol()
                self.tls_version = sock.version()
                # 1.18 pins during the handshake (server_cert_verifier.rs); here the check runs
                # right after it, still before a single request byte is written.
                if target.pin and (self.peer_fingerprint or "") != target.pin.upper():
                    raise PinMismatch(target.pin.upper(), self.peer_fingerprint)
        except BaseException:
            sock.close()
            raise
        self.sock = sock
        self.conn = http.client.HTTPConnection(target.host.split("%")[0], target.port, timeout=timeout)
        self.conn.sock = sock

    def start(self, method, path, headers):
        self.conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        self.conn.putheader("Host", host_header(self.target.host, self.target.port))
        for k, v in headers.items():
            self.conn.putheader(k, v)
        self.conn.endheaders()

    def send(self, data):
        self.sock.sendall(data)

    def response(self):
        resp = self.conn.getresponse()
        body = resp.read()
        return resp.status, dict(resp.getheaders()), body

    def abort(self):
        try:  # the plain socket call also unblocks a thread reading through the TLS layer
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass

    def close(self):
        try:
            self.conn.close()
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


def build_path(path, query=None):
    if query:
        return path + "?" + urllib.parse.urlencode(query)
    return path


def json_or_text(body):
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")


# --------------------------------------------------------------------------- helpers

def parse_hostport(value):
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        port = rest.lstrip(":") or str(DEFAULT_PORT)
    elif value.count(":") == 1:
        host, port = value.split(":")
    else:
        host, port = value, str(DEFAULT_PORT)
    return host, int(port)


def format_ip(client_address):
    ip = client_address[0]
    if len(client_address) >= 4 and client_address[3]:
        ip = "%s%%%d" % (ip.split("%")[0], client_address[3])
    return ip


def iface_ipv4(name):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        res = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))  # SIOCGIFADDR
        return socket.inet_ntoa(res[20:24])
    finally:
        s.close()


def multicast_forbidden(interfaces):
    """Safety guard: no multicast on the machine's real network. Refuses eth0, and any network
    namespace that is PID 1's (the root one) or that holds an eth0 (when PID 1's is unreadable,
    as inside `ip netns exec`). Returns the reason or None."""
    if "eth0" in interfaces:
        return "interface eth0"
    try:
        if os.stat("/proc/self/ns/net").st_ino == os.stat("/proc/1/ns/net").st_ino:
            return "root network namespace"
    except OSError:
        pass
    try:
        names = [n for _i, n in socket.if_nameindex()]
    except OSError:
        return "cannot list interfaces"
    if "eth0" in names:
        return "network namespace with eth0"
    return None


def rfc3339_ns(ns):
    secs, frac = divmod(ns, 1_000_000_000)
    dt = datetime.datetime.fromtimestamp(secs, tz=datetime.timezone.utc)
    return "%s.%09dZ" % (dt.strftime("%Y-%m-%dT%H:%M:%S"), frac)


def parse_rfc3339(value):
    try:
        return datetime.datetime.fromisoformat(value.replace("z", "Z")).timestamp()
    except (ValueError, TypeError, AttributeError):
        return None


def check_register_dto(d, require_port=True):
    """Shape of RegisterDtoV2 / MulticastMessageV2 (packages/core/src/http/dto_v2.rs)."""
    if not isinstance(d, dict):
        return "not an object"
    for key in ("alias", "fingerprint") + (("version",) if require_port else ()):
        if not isinstance(d.get(key), str):
            return "missing or non-string %s" % key
    if d.get("version") is not None and not isinstance(d.get("version"), str):
        return "non-string version"
    if require_port:
        port = d.get("port")
        if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
            return "missing or invalid port"
        if d.get("protocol") not in ("http", "https"):
            return "missing or invalid protocol"
    if d.get("deviceModel") is not None and not isinstance(d.get("deviceModel"), str):
        return "invalid deviceModel"
    if d.get("deviceType") is not None and not isinstance(d.get("deviceType"), str):
        return "invalid deviceType"
    if d.get("download") is not None and not isinstance(d.get("download"), bool):
        return "invalid download"
    return None


def check_file_dto(f):
    """Shape of FileDto (packages/core/src/model/transfer.rs)."""
    if not isinstance(f, dict):
        return "file is not an object"
    for key in ("id", "fileName", "fileType"):
        if not isinstance(f.get(key), str):
            return "file: missing or non-string %s" % key
    size = f.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return "file: missing or invalid size"
    for key in ("sha256", "preview"):
        if f.get(key) is not None and not isinstance(f.get(key), str):
            return "file: non-string %s" % key
    md = f.get("metadata")
    if md is not None:
        if not isinstance(md, dict):
            return "file: metadata is not an object"
        for key in ("modified", "accessed"):
            if md.get(key) is not None and not isinstance(md.get(key), str):
                return "file: non-string metadata.%s" % key
    return None


def normalize_device_type(value):
    if value is None:
        return None
    v = value.lower()
    return v if v in DEVICE_TYPES else "desktop"  # dto_v2.rs device_type_v2: unknown -> desktop


def device_fields(d):
    return {
        "alias": d.get("alias"),
        "fingerprint": d.get("fingerprint"),
        "deviceType": d.get("deviceType"),
        "deviceTypeNormalized": normalize_device_type(d.get("deviceType")),
        "deviceModel": d.get("deviceModel"),
        "port": d.get("port"),
        "protocol": d.get("protocol"),
        "version": d.get("version"),
        "download": d.get("download", False),
    }


def confine(base, file_name):
    """Relative, '/'-separated name -> path under base. Refuses '..' and absolute names
    (packages/localsend_isolates/lib/src/task/server/file_saver.dart sanitizeRelativeName)."""
    if "\x00" in file_name:
        return None, "NUL in file name"
    if file_name.startswith("/"):
        return None, "absolute file name"
    components = []
    for part in file_name.split("/"):
        if part == "..":
            return None, "path traversal"
        if part in ("", "."):
            continue
        components.append("".join("_" if ord(c) < 32 or c == "\x7f" else c for c in part))
    if not components:
        components = ["untitled"]
    path = os.path.join(base, *components)
    real_base = os.path.realpath(base)
    if not os.path.realpath(os.path.dirname(path)).startswith(real_base.rstrip("/") + "/") and \
            os.path.realpath(os.path.dirname(path)) != real_base:
        return None, "path leaves the destination"
    return path, None


def unique_path(path):
    """'name.ext' -> 'name (2).ext' while taken (file_saver.dart digestFilePathAndPrepareDirectory)."""
    if not os.path.exists(path):
        return path
    d, base = os.path.split(path)
    stem, dot, ext = base.rpartition(".")
    if not dot or not stem:
        stem, ext, dot = base, "", ""
    n = 2
    while True:
        candidate = os.path.join(d, "%s (%d)%s%s" % (stem, n, dot, ext))
        if not os.path.exists(candidate):
            return candidate
        n += 1


# --------------------------------------------------------------------------- HTTP server

class PeerHTTPServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, address, family, peer):
        self.address_family = family
        self.peer = peer
        super().__init__(address, PeerHandler)

    def server_bind(self):
        if self.address_family == socket.AF_INET6:
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        super().server_bind()

    def finish_request(self, request, client_address):
        ctx = self.peer.server_ctx
        if ctx is None:
            self.RequestHandlerClass(request, client_address, self)
            return
        request.settimeout(15)
        try:
            tls = ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as e:
            emit("tls-error", peer=format_ip(client_address), error=str(e))
            return
        try:
            self.RequestHandlerClass(tls, client_address, self)
        finally:
            try:
                tls.close()
            except OSError:
                pass

    def handle_error(self, request, client_address):
        emit("server-error", peer=format_ip(client_address), error=repr(sys.exc_info()[1]))


class BodyError(Exception):
    pass


class PeerHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "localsend-test-peer"
    sys_version = ""
    timeout = 120

    def log_message(self, fmt, *args):  # noqa: D401 - silence default logging
        if self.server.peer.args.verbose:
            emit("http-log", peer=self.client_ip(), message=fmt % args)

    def client_ip(self):
        return format_ip(self.client_address)

    def cert_fingerprint(self):
        if isinstance(self.connection, ssl.SSLSocket):
            der = self.connection.getpeercert(binary_form=True)
            return fingerprint_of_der(der) if der else None
        return None

    def do_GET(self):
        self.server.peer.dispatch(self, "GET")

    def do_POST(self):
        self.server.peer.dispatch(self, "POST")

    def do_PUT(self):
        self.server.peer.dispatch(self, "PUT")

    # -- body
    def body_framing(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            return "chunked", None
        cl = self.headers.get("Content-Length")
        if cl is None:
            return "none", 0
        try:
            return "length", int(cl)
        except ValueError:
            raise BodyError("bad Content-Length")

    def iter_body(self):
        framing, length = self.body_framing()
        r = self.rfile
        if framing == "chunked":
            while True:
                line = r.readline(65537)
                if not line:
                    raise BodyError("connection closed in chunk header")
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise BodyError("bad chunk header")
                if size == 0:
                    while True:
                        t = r.readline(65537)
                        if not t or t in (b"\r\n", b"\n"):
                            break
                    return
                remaining = size
                while remaining:
                    data = r.read(min(remaining, CHUNK))
                    if not data:
                        raise BodyError("connection closed in chunk")
                    remaining -= len(data)
                    yield data
                r.readline(3)
        else:
            remaining = length
            while remaining > 0:
                data = r.read(min(remaining, CHUNK))
                if not data:
                    raise BodyError("connection closed after %d of %d bytes" % (length - remaining, length))
                remaining -= len(data)
                yield data

    def discard_body(self, limit=16 * 1024 * 1024):
        """Reads and drops the request body before an early error answer, so that closing does not
        reset the connection before the peer has read the answer. Returns False if not fully read."""
        total = 0
        try:
            for data in self.iter_body():
                total += len(data)
                if total > limit:
                    return False
        except (BodyError, OSError, ssl.SSLError, socket.timeout):
            return False
        return True

    def read_body(self, limit=32 * 1024 * 1024):
        out = bytearray()
        for data in self.iter_body():
            out += data
            if len(out) > limit:
                raise BodyError("body too large")
        return bytes(out)

    # -- responses
    def send_json(self, status, obj, close=False):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)

    def send_message(self, status, message, close=False):
        self.send_json(status, {"message": message}, close=close)

    def send_empty(self, status, close=False):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()


# --------------------------------------------------------------------------- multicast

class Multicast:
    """One UDP socket per interface (and per family), as packages/core/src/multicast/socket.rs."""

    def __init__(self, peer, interfaces, group, port, ipv6):
        self.peer = peer
        self.group = group
        self.port = port
        self.sockets = []  # (sock, target, interface, family)
        why = multicast_forbidden(interfaces)
        if why:
            fail_setup("refusing-multicast", detail="%s; run inside a test network namespace "
                       "(scripts/harness/hosts.sh)" % why)
        for name in interfaces:
            try:
                addr = iface_ipv4(name)
            except OSError as e:
                fail_setup("interface-has-no-ipv4", interface=name, detail=str(e))
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            s.bind(("", port))
            mreq = struct.pack("4s4s", socket.inet_aton(group), socket.inet_aton(addr))
            s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(addr))
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
            s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
            try:
                s.setsockopt(socket.IPPROTO_IP, 49, 0)  # IP_MULTICAST_ALL off: only this interface's group
            except OSError:
                pass
            self.sockets.append((s, (group, port), name, socket.AF_INET))
            emit("multicast-bound", interface=name, address=addr, group=group, port=port)
            if ipv6:
                idx = socket.if_nametoindex(name)
                s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
                s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                s6.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s6.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                s6.bind(("::", port))
                mreq6 = socket.inet_pton(socket.AF_INET6, MULTICAST_GROUP_V6) + struct.pack("@I", idx)
                s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, mreq6)
                s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, struct.pack("@I", idx))
                s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_LOOP, 1)
                s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 1)
                try:
                    s6.setsockopt(socket.IPPROTO_IPV6, 29, 0)  # IPV6_MULTICAST_ALL off
                except OSError:
                    pass
                self.sockets.append((s6, (MULTICAST_GROUP_V6, port, 0, idx), name, socket.AF_INET6))
                emit("multicast-bound", interface=name, group=MULTICAST_GROUP_V6, port=port, ifindex=idx)
        threading.Thread(target=self._receive_loop, daemon=True).start()

    def send(self, payload, kind):
        data = json.dumps(payload).encode()
        for s, target, name, _family in self.sockets:
            try:
                s.sendto(data, target)
                emit("multicast-sent", kind=kind, interface=name, group=target[0], bytes=len(data))
            except OSError as e:
                emit("multicast-send-failed", interface=name, group=target[0], error=str(e))

    def announce_burst(self, payload_fn):
        for delay in ANNOUNCE_DELAYS:
            time.sleep(delay)
            self.send(payload_fn(), "announce")

    def _receive_loop(self):
        socks = {s.fileno(): (s, name) for s, _t, name, _f in self.sockets}
        while True:
            try:
                readable, _, _ = select.select(list(socks), [], [], 1.0)
            except OSError:
                return
            for fd in readable:
                s, name = socks[fd]
                try:
                    data, src = s.recvfrom(65536)
                except OSError:
                    continue
                try:
                    self.peer.on_datagram(data, src, name)
                except Exception as e:  # noqa: BLE001
                    emit("error", reason="datagram-handler-failed", detail=repr(e))


# --------------------------------------------------------------------------- receiver session state

class RecvFile:
    def __init__(self, dto):
        self.dto = dto
        self.token = str(uuid.uuid4())
        self.status = "pending"  # pending | in-progress | finished | failed
        self.attempts = 0
        self.path = None
        self.result = None


class RecvSession:
    def __init__(self, session_id, sender_ip, info, cert_fp, files):
        self.id = session_id
        self.sender_ip = sender_ip
        self.info = info
        self.cert_fp = cert_fp
        self.files = files  # id -> RecvFile
        self.bytes = 0
        self.cancel_triggered = False
        self.outcome_recorded = False

    def complete(self):
        return all(f.status in ("finished", "failed") for f in self.files.values())


class Pending:
    def __init__(self, session_id, sender_ip):
        self.id = session_id
        self.sender_ip = sender_ip
        self.cancelled = threading.Event()


# --------------------------------------------------------------------------- the peer

class Peer:
    def __init__(self, args, role):
        self.args = args
        self.role = role  # receive | send | discover | probe | announce
        self.legacy = bool(getattr(args, "legacy", False))
        self.http_mode = bool(getattr(args, "http", False))
        self.identity = Identity(args.home)
        self.fingerprint = (args.fingerprint or self.identity.fingerprint)
        self.version = args.protocol_version or (LEGACY_PROTOCOL_VERSION if self.legacy else PROTOCOL_VERSION)
        self.port = args.port
        present = (not self.legacy) or getattr(args, "client_cert", False)
        self.client_ctx = client_tls_context(self.identity, present_cert=present, alpn=not self.legacy)
        self.server_ctx = None
        self.servers = []
        self.multicast = None
        self.lock = threading.RLock()
        self.done = threading.Event()
        self.outcomes = []
        # receiver state
        self.slot = None  # None | Pending | RecvSession
        self.pin_attempts = {}
        self.active_uploads = 0
        self.ended = {}  # session id -> RecvSession that ended (finished) recently
        # sender state
        self.send_state = None
        self.found = {}  # fingerprint -> found dict
        self.found_list = []
        self.found_cv = threading.Condition(self.lock)
        self.answer_announcements = not getattr(args, "no_answer", False)

    # -- identity / dtos
    @property
    def protocol(self):
        return "http" if self.http_mode else "https"

    def register_dto(self):
        d = {"alias": self.args.alias, "version": self.version}
        if self.args.device_model is not None or self.legacy:
            d["deviceModel"] = self.args.device_model
        if self.args.device_type is not None or self.legacy:
            d["deviceType"] = self.args.device_type
        d.update({"fingerprint": self.fingerprint, "port": self.port, "protocol": self.protocol,
                  "download": False})
        return d

    def info_dto(self):
        d = {"alias": self.args.alias, "version": self.version}
        if self.args.device_model is not None or self.legacy:
            d["deviceModel"] = self.args.device_model
        if self.args.device_type is not None or self.legacy:
            d["deviceType"] = self.args.device_type
        d.update({"fingerprint": self.fingerprint, "download": False})
        return d

    def announcement(self, announce=True):
        d = self.register_dto()
        if self.legacy:
            d["announcement"] = announce  # v1 flag, still sent by 1.17
        d["announce"] = announce
        return d

    # -- servers
    def start_server(self):
        if not self.http_mode:
            mode = "none" if self.legacy else ("optional" if getattr(self.args, "optional_client_cert", False)
                                               else "required")
            self.server_ctx = server_tls_context(self.identity, mode)
        binds = self.args.bind or (["0.0.0.0", "::"] if getattr(self.args, "ipv6", False) else ["0.0.0.0"])
        for addr in binds:
            family = socket.AF_INET6 if ":" in addr else socket.AF_INET
            try:
                srv = PeerHTTPServer((addr, self.port), family, self)
            except OSError as e:
                fail_setup("cannot-listen", address=addr, port=self.port, detail=str(e))
            if self.port == 0:
                self.port = srv.server_address[1]
            self.servers.append(srv)
            threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.5}, daemon=True).start()
        emit("listening", port=self.port, bind=binds, protocol=self.protocol, fingerprint=self.fingerprint,
             certFingerprint=self.identity.fingerprint, alias=self.args.alias, version=self.version,
             clientCertificate=("n/a" if self.http_mode else
                                "none" if self.legacy else
                                "optional" if getattr(self.args, "optional_client_cert", False) else "required"),
             role=self.role)

    def start_multicast(self):
        ifaces = self.args.interface or []
        if not ifaces:
            fail_setup("interface-required",
                       detail="multicast needs --interface NAME (never all interfaces); or pass --no-discovery")
        self.multicast = Multicast(self, ifaces, self.args.multicast_group, self.args.multicast_port,
                                   self.args.ipv6)

    def announce(self):
        if self.multicast and not getattr(self.args, "no_announce", False):
            threading.Thread(target=self.multicast.announce_burst, args=(self.announcement,), daemon=True).start()

    # -- outgoing requests
    def request(self, target, method, path, query=None, body=None, timeout=10.0, headers=None):
        """Returns dict(status, body, peerFingerprint, ...) or raises."""
        conn = Connection(self, target, timeout)
        try:
            hdrs = dict(headers or {})
            data = b""
            if body is not None:
                data = json.dumps(body).encode()
                hdrs["Content-Type"] = "application/json"
            if method == "POST" or data:
                hdrs["Content-Length"] = str(len(data))
            conn.start(method, build_path(path, query), hdrs)
            if data:
                conn.send(data)
            status, rh, rbody = conn.response()
            return {"status": status, "body": json_or_text(rbody), "peerFingerprint": conn.peer_fingerprint,
                    "alpn": conn.alpn, "tls": conn.tls_version}
        finally:
            conn.close()

    # -- dispatch of incoming HTTP
    def dispatch(self, h, method):
        parsed = urllib.parse.urlsplit(h.path)
        path = parsed.path
        query = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
        try:
            if method == "GET" and path in (API + "/info", API_V1 + "/info"):
                return self.handle_info(h, path, query)
            if method == "POST" and path == API + "/register":
                return self.handle_register(h, path)
            if method == "POST" and path == API + "/prepare-upload":
                return self.handle_prepare_upload(h, query, v1=False)
            if method == "POST" and path == API + "/upload":
                return self.handle_upload(h, query, v1=False)
            if method == "POST" and path == API + "/cancel":
                return self.handle_cancel(h, query, v1=False)
            if self.legacy:  # 1.17 also served the v1 routes (receive_controller.dart @ v1.17.0)
                if method == "POST" and path == API_V1 + "/register":
                    return self.handle_register(h, path)
                if method == "POST" and path == API_V1 + "/send-request":
                    return self.handle_prepare_upload(h, query, v1=True)
                if method == "POST" and path == API_V1 + "/send":
                    return self.handle_upload(h, query, v1=True)
                if method == "POST" and path == API_V1 + "/cancel":
                    return self.handle_cancel(h, query, v1=True)
            emit("request", method=method, path=path, status=404, peer=h.client_ip())
            h.send_empty(404, close=not h.discard_body())
        except BodyError as e:
            emit("request-error", method=method, path=path, peer=h.client_ip(), error=str(e))
            h.close_connection = True
        except (ConnectionError, ssl.SSLError, socket.timeout) as e:
            emit("request-error", method=method, path=path, peer=h.client_ip(), error=repr(e))
            h.close_connection = True

    # -- /info
    def handle_info(self, h, path, query):
        if self.legacy and query.get("fingerprint") == self.fingerprint:
            emit("info", path=path, peer=h.client_ip(), status=412)
            return h.send_message(412, "Self-discovered")
        emit("info", path=path, peer=h.client_ip(), status=200, certFingerprint=h.cert_fingerprint())
        h.send_json(200, self.info_dto())

    # -- /register
    def handle_register(self, h, path):
        raw = h.read_body()
        try:
            dto = json.loads(raw)
        except ValueError:
            dto = None
        problem = check_register_dto(dto, require_port=not self.legacy)
        ip = h.client_ip()
        cert_fp = h.cert_fingerprint()
        if problem:
            emit("register", peer=ip, status=400, problem=problem)
            return h.send_message(400, "Invalid JSON body" if not self.legacy else "Request body malformed")
        if self.legacy and dto.get("fingerprint") == self.fingerprint:
            emit("register", peer=ip, status=412, **device_fields(dto))
            return h.send_message(412, "Self-discovered")
        # packages/core/src/http/server/v2.rs register: on TLS only trust a claimed fingerprint
        # that the client certificate proves; otherwise the registration is ignored (still 200).
        valid = cert_fp is None or dto["fingerprint"].upper() == cert_fp
        emit("register", peer=ip, status=200, path=path, certFingerprint=cert_fp, fingerprintValid=valid,
             **device_fields(dto))
        if valid:
            self.note_found(dict(device_fields(dto), address=ip, via="register", certFingerprint=cert_fp))
        h.send_json(200, self.info_dto())

    # -- discovery bookkeeping
    def note_found(self, found):
        emit("found", **found)
        with self.found_cv:
            self.found.setdefault(found.get("fingerprint"), found)
            self.found_list.append(found)
            self.found_cv.notify_all()

    def on_datagram(self, data, src, interface):
        address = src[0]
        if len(src) >= 4 and src[3]:
            address = "%s%%%d" % (address.split("%")[0], src[3])
        try:
            msg = json.loads(data)
        except ValueError:
            emit("multicast-invalid", address=address, interface=interface, problem="not JSON", bytes=len(data))
            return
        if isinstance(msg, dict) and msg.get("fingerprint") == self.fingerprint:
            return  # own message (loopback is on); multicast/mod.rs filters by fingerprint
        problem = check_register_dto(msg, require_port=not self.legacy)
        if problem or not isinstance(msg, dict):
            emit("multicast-invalid", address=address, interface=interface, problem=problem or "not an object",
                 message=msg if isinstance(msg, (dict, list)) else None)
            return
        announce_flag = msg.get("announce")
        announcement_flag = msg.get("announcement")
        is_announcement = bool(announce_flag) or bool(announcement_flag)
        found = dict(device_fields(msg), address=address, interface=interface, via="multicast",
                     announce=announce_flag, announcement=announcement_flag)
        if self.legacy:
            found["port"] = msg.get("port") or self.port
            found["protocol"] = msg.get("protocol") or self.protocol
        self.note_found(found)
        if not self.answer_announcements or not self.servers:
            return
        if self.legacy and not is_announcement:
            return  # 1.17 only answers announce/announcement == true
        # 1.18 answers every parsable message (MulticastMessageV2 has no announce field).
        threading.Thread(target=self.answer_announcement, args=(found,), daemon=True).start()

    def answer_announcement(self, found):
        protocol = found.get("protocol") or "https"
        pin = found["fingerprint"] if (protocol == "https" and not self.legacy) else None
        target = Target(found["address"], found["port"], protocol, pin)
        try:
            res = self.request(target, "POST", API + "/register", body=self.register_dto(),
                               timeout=self.args.discovery_timeout)
        except Exception as e:  # noqa: BLE001
            mismatch = isinstance(e, PinMismatch)
            emit("register-answer", to=target.describe(), ok=False, error=str(e), pinMismatch=mismatch)
            if self.legacy:
                # 1.17 multicast_discovery.dart: fall back to a UDP answer with announce=false
                self.multicast.send(self.announcement(announce=False), "answer")
            return
        ok = res["status"] == 200 and isinstance(res["body"], dict)
        emit("register-answer", to=target.describe(), ok=ok, status=res["status"],
             peerFingerprint=res["peerFingerprint"], alpn=res["alpn"])
        if ok:
            body = res["body"]
            # discovery/mod.rs answer_announcement: the pinned (announced) fingerprint identifies the peer
            fp = found["fingerprint"] if protocol == "https" and not self.legacy else body.get("fingerprint")
            self.note_found(dict(device_fields(body), fingerprint=fp, bodyFingerprint=body.get("fingerprint"),
                                 certFingerprint=res["peerFingerprint"], address=found["address"],
                                 port=found["port"], protocol=protocol, via="register-response"))

    # -- PIN (1.18: common/pin.rs ; legacy: controller/common.dart @ v1.17.0)
    def check_pin(self, h, query):
        pin = getattr(self.args, "pin", None) if self.role == "receive" else None
        if pin is None:
            return True
        ip = h.client_ip().split("%")[0]
        given = query.get("pin")
        with self.lock:
            count = self.pin_attempts.get(ip, 0)
            if count >= MAX_PIN_ATTEMPTS:
                status, message = 429, "Too many requests" if not self.legacy else "Too many attempts."
            elif given == pin:
                if not self.legacy:
                    self.pin_attempts.pop(ip, None)
                return True
            elif given is None or (self.legacy and given == ""):
                status, message = 401, "PIN required" if not self.legacy else "Invalid pin."
            else:
                self.pin_attempts[ip] = count + 1
                if self.legacy and count == 2:
                    status, message = 429, "Too many attempts."
                else:
                    status, message = 401, "Invalid PIN" if not self.legacy else "Invalid pin."
            attempts = self.pin_attempts.get(ip, 0)
        emit("prepare-upload", peer=h.client_ip(), status=status, message=message, pinGiven=given is not None,
             failedPinAttempts=attempts)
        h.send_message(status, message)
        return False

    # -- /prepare-upload (receiver)
    def handle_prepare_upload(self, h, query, v1):
        ip = h.client_ip()
        cert_fp = h.cert_fingerprint()
        raw = h.read_body()
        if self.legacy and self.slot is not None:
            emit("prepare-upload", peer=ip, status=409, message="Blocked by another session")
            return h.send_message(409, "Blocked by another session")
        if not self.check_pin(h, query):
            return
        try:
            dto = json.loads(raw)
        except ValueError:
            dto = None
        problem = None
        if not isinstance(dto, dict) or not isinstance(dto.get("files"), dict):
            problem = "missing info/files"
        else:
            problem = check_register_dto(dto.get("info"), require_port=not (self.legacy and v1))
            if not problem:
                for fid, f in dto["files"].items():
                    problem = check_file_dto(f)
                    if problem:
                        break
        if problem:
            emit("prepare-upload", peer=ip, status=400, problem=problem)
            return h.send_message(400, "Invalid JSON body")
        files = dto["files"]
        info = dto["info"]
        if not files:
            emit("prepare-upload", peer=ip, status=400, problem="no files")
            return h.send_message(400, "No files provided")
        summary = [{"id": fid, "fileName": f["fileName"], "size": f["size"], "fileType": f["fileType"],
                    "sha256": f.get("sha256"), "preview": f.get("preview"), "metadata": f.get("metadata"),
                    "idMatchesKey": f["id"] == fid} for fid, f in files.items()]
        common = {"peer": ip, "sender": device_fields(info), "infoFingerprint": info.get("fingerprint"),
                  "certFingerprint": cert_fp,
                  "fingerprintMatch": None if cert_fp is None else info.get("fingerprint", "").upper() == cert_fp,
                  "files": summary, "v1": v1}
        session_id = str(uuid.uuid4())
        pending = Pending(session_id, ip)
        with self.lock:
            busy = self.slot is not None or (self.role == "receive" and self.args.busy)
            if not busy:
                self.slot = pending
        if busy:
            emit("prepare-upload", status=409, message="Blocked by another session", **common)
            if self.role == "receive" and self.args.busy:
                self.record_outcome("busy")
            return h.send_message(409, "Blocked by another session")
        if self.role != "receive":
            self._clear_pending(pending)
            emit("prepare-upload", status=403, message="Rejected (not receiving)", **common)
            return h.send_message(403, "Rejected")
        # waiting for the "user" decision; the sender may cancel or disconnect meanwhile
        deadline = time.time() + (self.args.delay_decision or 0)
        while time.time() < deadline:
            if pending.cancelled.wait(0.1):
                break
            if self._peer_gone(h):
                self._clear_pending(pending)
                emit("prepare-upload-aborted", sessionId=session_id, reason="sender disconnected", **common)
                self.record_outcome("cancelled-by-sender")
                h.close_connection = True
                return
        if pending.cancelled.is_set():
            self._clear_pending(pending)
            emit("prepare-upload", status=403, message="Cancelled by sender", sessionId=session_id, **common)
            self.record_outcome("cancelled-by-sender")
            return h.send_message(403, "Cancelled by sender")
        if self.args.decline:
            self._clear_pending(pending)
            emit("prepare-upload", status=403, message="Rejected", **common)
            self.record_outcome("declined")
            return h.send_message(403, "Rejected" if not self.legacy else "File request declined by recipient")
        # a message request: one text file with a preview (receive_session_state.dart `message`)
        if len(files) == 1:
            only = next(iter(files.values()))
            if only["fileType"].startswith("text/") or only["fileType"] == "text":
                if only.get("preview") is not None:
                    self._clear_pending(pending)
                    emit("text", peer=ip, message=only["preview"], fileName=only["fileName"],
                         size=only["size"], sha256=only.get("sha256"),
                         sizeMatches=only["size"] == len(only["preview"].encode()))
                    emit("prepare-upload", status=204, **common)
                    self.record_outcome("text")
                    return h.send_empty(204)
        accepted = {}
        for fid, f in files.items():
            if any(self._glob(f["fileName"], g) for g in (self.args.reject_file or [])):
                continue
            accepted[fid] = RecvFile(f)
        if not accepted:
            self._clear_pending(pending)
            emit("prepare-upload", status=204, message="nothing accepted", **common)
            self.record_outcome("no-transfer")
            return h.send_empty(204)
        session = RecvSession(session_id, ip, info, cert_fp, accepted)
        with self.lock:
            if self.slot is pending:
                self.slot = session
        tokens = {fid: rf.token for fid, rf in accepted.items()}
        emit("prepare-upload", status=200, sessionId=session_id, tokens=tokens, **common)
        if v1:
            return h.send_json(200, tokens)
        h.send_json(200, {"sessionId": session_id, "files": tokens})

    @staticmethod
    def _glob(name, pattern):
        import fnmatch
        return fnmatch.fnmatch(name, pattern) or fnmatch.fnmatch(os.path.basename(name), pattern)

    def _clear_pending(self, pending):
        with self.lock:
            if self.slot is pending:
                self.slot = None

    @staticmethod
    def _peer_gone(h):
        sock = h.connection
        try:
            if isinstance(sock, ssl.SSLSocket) and sock.pending():
                return False
            r, _, _ = select.select([sock], [], [], 0)
            if not r:
                return False
            sock.setblocking(False)
            try:
                data = sock.recv(1)
            except (ssl.SSLWantReadError, BlockingIOError):
                return False
            finally:
                sock.setblocking(True)
                sock.settimeout(h.timeout)
            return data == b""
        except (OSError, ValueError):
            return True

    # -- /upload (receiver)
    def handle_upload(self, h, query, v1):
        ip = h.client_ip()
        session_id = query.get("sessionId")
        file_id = query.get("fileId")
        token = query.get("token")
        framing, length = h.body_framing()
        base = {"peer": ip, "sessionId": session_id, "fileId": file_id, "framing": framing,
                "contentLength": length}
        if file_id is None or token is None or (not v1 and session_id is None):
            emit("upload", status=400, message="Missing parameters", **base)
            return h.send_message(400, "Missing parameters", close=not h.discard_body())
        with self.lock:
            s = self.slot
            err = None
            if not isinstance(s, RecvSession):
                err = (409, "No session") if self.legacy else (403, "Invalid token or IP address")
            elif (not v1 and s.id != session_id) or s.sender_ip != ip:
                err = (403, "Invalid token or IP address")
            else:
                rf = s.files.get(file_id)
                if rf is None or rf.token != token or rf.status != "pending":
                    err = (403, "Invalid token or IP address")
            if err is None:
                rf.status = "in-progress"
                rf.attempts += 1
                self.active_uploads += 1
        if err:
            emit("upload", status=err[0], message=err[1], **base)
            return h.send_message(err[0], err[1], close=not h.discard_body())
        try:
            self._receive_file(h, s, rf, base)
        finally:
            with self.lock:
                self.active_uploads -= 1
            self._maybe_end_session(s)

    def _receive_file(self, h, s, rf, base):
        dto = rf.dto
        base = dict(base, fileName=dto["fileName"], size=dto["size"], attempt=rf.attempts)
        path, why = confine(self.args.dir, dto["fileName"])
        if path is None:
            self._finalize(s, rf, "failed")
            emit("upload", status=500, message="Path traversal detected", reason=why, **base)
            return h.send_message(500, "Path traversal detected", close=not h.discard_body())
        os.makedirs(os.path.dirname(path), exist_ok=True)
        part = path + ".part-%s" % uuid.uuid4().hex[:8]
        hasher = hashlib.sha256()
        received = 0
        too_long = False
        error = None
        abort = False
        try:
            with open(part, "wb") as out:
                for data in h.iter_body():
                    received += len(data)
                    if too_long:
                        if received > dto["size"] + 16 * 1024 * 1024:
                            break  # give up draining; the connection gets closed
                        continue
                    if not self.legacy and received > dto["size"]:
                        # save.rs write_file_from_receiver fails once more than the announced size
                        # arrived; the rest is drained here so that the 500 reaches the sender
                        too_long = True
                        continue
                    hasher.update(data)
                    out.write(data)
                    s.bytes += len(data)
                    if self.args.cancel_after_bytes is not None and not s.cancel_triggered \
                            and s.bytes >= self.args.cancel_after_bytes:
                        s.cancel_triggered = True
                        self.receiver_cancel(s)
                        if self.args.cancel_abort:
                            abort = True
                            break
        except (BodyError, OSError, ssl.SSLError, socket.timeout) as e:
            error = str(e) or repr(e)
        actual = hasher.hexdigest()
        fields = dict(base, bytes=received, sha256=actual, expectedSha256=dto.get("sha256"))
        if abort:
            os.unlink(part)
            self._finalize(s, rf, "failed")
            emit("upload", status=None, message="connection closed by receiver (cancel)", **fields)
            h.close_connection = True
            return
        if error is not None:
            os.unlink(part)
            self._finalize(s, rf, "failed")
            emit("upload", status=None, message="upload aborted: %s" % error, **fields)
            h.close_connection = True
            return
        if too_long or (not self.legacy and received != dto["size"]):
            os.unlink(part)
            self._finalize(s, rf, "failed")
            msg = "Expected %d bytes, received %s%d" % (dto["size"], "at least " if too_long else "", received)
            emit("upload", status=500, message=msg, sizeMismatch=True, **fields)
            return h.send_message(500, "Status code: 500 Internal Server Error",
                                  close=received > dto["size"] + 16 * 1024 * 1024)
        expected = dto.get("sha256")
        verify = not self.legacy and not self.args.no_verify_checksum
        if verify and expected is not None and actual.lower() != expected.lower():
            os.unlink(part)
            retry = rf.attempts < self.args.max_attempts
            self._finalize(s, rf, "pending" if retry else "failed")
            emit("upload", status=422, message="Checksum mismatch", retryAllowed=retry, **fields)
            return h.send_message(422, "Checksum mismatch")
        final = unique_path(path)
        os.replace(part, final)
        md = dto.get("metadata") or {}
        mtime = parse_rfc3339(md.get("modified")) if md.get("modified") else None
        atime = parse_rfc3339(md.get("accessed")) if md.get("accessed") else None
        if mtime is not None or atime is not None:
            st = os.stat(final)
            try:
                os.utime(final, (atime if atime is not None else st.st_atime,
                                 mtime if mtime is not None else st.st_mtime))
            except OSError:
                pass
        rf.path = final
        self._finalize(s, rf, "finished")
        emit("upload", status=200, **fields)
        emit("received", fileId=dto["id"], fileName=dto["fileName"], path=final, bytes=received, sha256=actual,
             expectedSha256=expected, checksumMatches=None if expected is None else actual == expected.lower(),
             sizeMatches=received == dto["size"], sessionId=s.id)
        h.send_empty(200)

    def _finalize(self, s, rf, status):
        with self.lock:
            if rf.status == "in-progress":
                rf.status = status

    def _maybe_end_session(self, s):
        ended = False
        with self.lock:
            if self.slot is s and s.complete():
                self.slot = None
                ended = True
        if ended:
            states = {fid: rf.status for fid, rf in s.files.items()}
            ok = all(v == "finished" for v in states.values())
            emit("session-end", sessionId=s.id, reason="finished", files=states, ok=ok)
            if s.cancel_triggered:
                return
            with self.lock:
                self.ended[s.id] = s
            if ok:
                self._session_outcome(s, "ok")
            else:
                # A sender that cancels first drops its upload connections (which fails the files and
                # may end the session) and only then POSTs /cancel: give that a moment to arrive.
                threading.Timer(1.0, self._session_outcome, args=(s, "failed")).start()

    def _session_outcome(self, s, outcome):
        with self.lock:
            if s.outcome_recorded:
                return
            s.outcome_recorded = True
        self.record_outcome(outcome)

    # the receiver cancels its session as the 1.18 app does (receive_controller.dart cancelSession):
    # free the slot so further uploads get 403 and a new session can start, then POST /cancel to the
    # sender's server (its announced port/protocol, pinned to its certificate). Uploads in progress
    # keep running (ServerHandle::cancel_v2_session) unless --cancel-abort.
    def receiver_cancel(self, s):
        with self.lock:
            if self.slot is s:
                self.slot = None
        emit("cancelling", sessionId=s.id, bytesReceived=s.bytes, sender=s.sender_ip)

        def notify():
            protocol = s.info.get("protocol") or "https"
            pin = None
            if protocol == "https" and not self.legacy:
                pin = s.cert_fp or s.info.get("fingerprint")
            target = Target(s.sender_ip, s.info.get("port") or DEFAULT_PORT, protocol, pin)
            try:
                res = self.request(target, "POST", API + "/cancel", query={"sessionId": s.id}, timeout=5)
                emit("cancel-sent", to=target.describe(), sessionId=s.id, status=res["status"])
            except Exception as e:  # noqa: BLE001
                emit("cancel-sent", to=target.describe(), sessionId=s.id, status=None, error=str(e))
            emit("session-end", sessionId=s.id, reason="cancelled-by-receiver")
            deadline = time.time() + 30
            while time.time() < deadline:
                with self.lock:
                    if self.active_uploads == 0:
                        break
                time.sleep(0.1)
            self.record_outcome("cancelled-by-receiver")
        threading.Thread(target=notify, daemon=True).start()

    # -- /cancel
    def handle_cancel(self, h, query, v1):
        ip = h.client_ip()
        session_id = query.get("sessionId")
        h.read_body()
        # sender role: the receiver cancels a session we are sending (v2.rs CancelReceived)
        st = self.send_state
        if st is not None and session_id is not None and session_id == st.get("remoteSessionId"):
            matches_ip = ip.split("%")[0] == st["target"].host.split("%")[0]
            emit("cancel-received", peer=ip, sessionId=session_id, fromTarget=matches_ip)
            if matches_ip:
                st["cancelledByReceiver"] = True
                st["abort"].set()
                for c in list(st["conns"]):
                    c.abort()
                return h.send_empty(200)
            if self.legacy:
                return h.send_message(403, "No permission")
            return h.send_empty(200)
        with self.lock:
            s = self.slot
            result = None
            if isinstance(s, Pending) and s.sender_ip == ip and (session_id is None or session_id == s.id):
                s.cancelled.set()  # the waiting prepare-upload answers 403 "Cancelled by sender"
                result = "pending"
            elif isinstance(s, RecvSession) and s.sender_ip == ip and (session_id == s.id or (v1 and session_id is None)):
                self.slot = None
                result = "active"
        if result == "pending":
            emit("cancel", peer=ip, sessionId=session_id, status=200, cancelled="pending")
            return h.send_empty(200)
        if result is None and session_id is not None:
            with self.lock:
                old = self.ended.get(session_id)
            if old is not None and old.sender_ip == ip:
                # 1.18 answers 200 and only notes a CancelReceived: the session was already over
                emit("cancel", peer=ip, sessionId=session_id, status=403 if self.legacy else 200,
                     cancelled="ended-session")
                self._session_outcome(old, "cancelled-by-sender")
                if self.legacy:
                    return h.send_message(403, "No permission")
                return h.send_empty(200)
        if result == "active":
            emit("cancel", peer=ip, sessionId=session_id, status=200, cancelled="session")
            emit("session-end", sessionId=s.id, reason="cancelled-by-sender",
                 files={fid: rf.status for fid, rf in s.files.items()})
            self.record_outcome("cancelled-by-sender")
            return h.send_empty(200)
        if self.legacy:
            emit("cancel", peer=ip, sessionId=session_id, status=403, cancelled=None)
            return h.send_message(403, "No permission")
        emit("cancel", peer=ip, sessionId=session_id, status=200, cancelled=None)
        h.send_empty(200)

    def record_outcome(self, outcome):
        with self.lock:
            self.outcomes.append(outcome)
        emit("outcome", outcome=outcome)
        self.done.set()


# --------------------------------------------------------------------------- commands

def common_setup(args, role, server=True, discovery=True):
    peer = Peer(args, role)
    if server:
        peer.start_server()
    if discovery:
        peer.start_multicast()
        peer.announce()
    return peer


def conclude(peer, outcome, expected, **fields):
    ok = outcome == expected
    if not ok:
        emit("error", reason="unexpected-outcome", outcome=outcome, expected=expected)
    emit("done", ok=ok, outcome=outcome, expected=expected, **fields)
    finish(EXIT_OK if ok else EXIT_FAIL)


def cmd_receive(args):
    os.makedirs(args.dir, exist_ok=True)
    peer = common_setup(args, "receive", server=True, discovery=not args.no_discovery)
    expected = args.expect
    if expected is None:
        expected = ("declined" if args.decline else "busy" if args.busy else
                    "cancelled-by-receiver" if args.cancel_after_bytes is not None else "ok")
    deadline = time.time() + args.seconds if args.seconds else None
    while True:
        remaining = None if deadline is None else deadline - time.time()
        if remaining is not None and remaining <= 0:
            break
        if peer.done.wait(min(remaining, 1.0) if remaining is not None else 1.0):
            if args.once:
                # let a running upload (e.g. after the receiver cancelled) finish its response
                end = time.time() + 5
                while time.time() < end:
                    with peer.lock:
                        if peer.active_uploads == 0:
                            break
                    time.sleep(0.05)
                time.sleep(0.2)
                conclude(peer, peer.outcomes[0], expected, outcomes=peer.outcomes)
            peer.done.clear()
    if args.once or args.expect:
        outcome = peer.outcomes[0] if peer.outcomes else "timeout"
        conclude(peer, outcome, expected, outcomes=peer.outcomes)
    emit("done", ok=True, outcome="stopped", outcomes=peer.outcomes)
    finish(EXIT_OK)


def cmd_discover(args):
    peer = common_setup(args, "discover", server=not args.no_server, discovery=True)
    time.sleep(args.seconds)
    devices = {}
    for f in peer.found_list:
        devices.setdefault(f.get("fingerprint"), []).append(f)
    summary = []
    for fp, items in devices.items():
        first = items[0]
        summary.append({"fingerprint": fp, "alias": first.get("alias"), "address": first.get("address"),
                        "port": first.get("port"), "protocol": first.get("protocol"),
                        "deviceType": first.get("deviceType"), "deviceModel": first.get("deviceModel"),
                        "version": first.get("version"), "via": sorted({i["via"] for i in items})})
    emit("devices", devices=summary)
    emit("done", ok=True, outcome="ok", count=len(summary))
    finish(EXIT_OK)


def cmd_announce(args):
    peer = Peer(args, "announce")
    peer.start_multicast()
    if args.raw is not None:
        try:
            payload = json.loads(args.raw)
        except ValueError:
            fail_setup("raw-is-not-json")
        fn = lambda: payload  # noqa: E731
    else:
        flag = {"true": True, "false": False}.get(args.announce_flag)

        def fn():
            d = peer.announcement(announce=bool(flag))
            if args.announce_flag == "omit":
                d.pop("announce", None)
                d.pop("announcement", None)
            return d
    for i in range(args.count):
        if i:
            time.sleep(args.interval)
        if args.burst:
            peer.multicast.announce_burst(fn)
        else:
            peer.multicast.send(fn(), "announce")
    time.sleep(args.linger)
    emit("done", ok=True, outcome="ok")
    finish(EXIT_OK)


def cmd_probe(args):
    peer = Peer(args, "probe")
    host, port = parse_hostport(args.address)
    target = Target(host, port, "http" if args.http else "https", args.expect_fingerprint)
    results = {}
    for name, method, path, body in (("info-v2", "GET", API + "/info", None),
                                     ("info-v1", "GET", API_V1 + "/info", None),
                                     ("register", "POST", API + "/register", peer.register_dto())):
        try:
            res = peer.request(target, method, path, body=body, timeout=args.timeout)
            emit("probe", check=name, path=path, **res)
            results[name] = res["status"]
        except Exception as e:  # noqa: BLE001
            emit("probe", check=name, path=path, status=None, error=str(e), pinMismatch=isinstance(e, PinMismatch))
            results[name] = None
    if target.protocol == "https":
        # Does the server insist on a client certificate (1.18) or not (<= 1.17)?
        bare = Peer.__new__(Peer)
        bare.client_ctx = client_tls_context(peer.identity, present_cert=False, alpn=True)
        try:
            res = Peer.request(bare, Target(host, port, "https"), "GET", API + "/info", timeout=args.timeout)
            emit("probe", check="info-without-client-certificate", status=res["status"], clientCertRequired=False)
            results["no-cert"] = res["status"]
        except Exception as e:  # noqa: BLE001
            emit("probe", check="info-without-client-certificate", status=None, error=str(e),
                 clientCertRequired=True)
            results["no-cert"] = None
    ok = results.get("info-v2") == 200
    emit("done", ok=ok, outcome="ok" if ok else "failed", results=results)
    finish(EXIT_OK if ok else EXIT_FAIL)


# ----------------------------------------------------------------- send

class SendFile:
    def __init__(self, fid, name, path=None, data=None):
        self.id = fid
        self.name = name
        self.path = path
        self.data = data
        self.size = len(data) if data is not None else os.path.getsize(path)

    def chunks(self):
        if self.data is not None:
            for i in range(0, len(self.data), CHUNK):
                yield self.data[i:i + CHUNK]
            return
        with open(self.path, "rb") as f:
            while True:
                b = f.read(CHUNK)
                if not b:
                    return
                yield b

    def sha256(self):
        h = hashlib.sha256()
        for b in self.chunks():
            h.update(b)
        return h.hexdigest()


def collect_files(paths):
    out = []
    for p in paths:
        p = os.path.abspath(p)
        if os.path.isdir(p):
            top = os.path.basename(p.rstrip("/"))
            for root, dirs, names in os.walk(p):
                dirs.sort()
                for n in sorted(names):
                    full = os.path.join(root, n)
                    rel = os.path.relpath(full, p).replace(os.sep, "/")
                    # selected_sending_files_provider.dart AddDirectoryAction: "<dir name>/<relative>"
                    out.append(SendFile(str(uuid.uuid4()), "%s/%s" % (top, rel), path=full))
        elif os.path.isfile(p):
            out.append(SendFile(str(uuid.uuid4()), os.path.basename(p), path=p))
        else:
            fail_setup("no-such-file", path=p)
    return out


def find_target(peer, args):
    if args.address:
        host, port = parse_hostport(args.address)
        protocol = "http" if args.http else "https"
        if protocol == "https" and not peer.legacy and not args.expect_fingerprint:
            # trust on first use, as 1.18 discovery does for a known address (discovery/mod.rs discover)
            try:
                res = peer.request(Target(host, port, protocol), "POST", API + "/register",
                                   body=peer.register_dto(), timeout=max(args.discovery_timeout, 2.0))
            except Exception as e:  # noqa: BLE001
                conclude(peer, "connect-failed", args.expect or "ok", error=str(e))
            emit("target", address=host, port=port, protocol=protocol, fingerprint=res["peerFingerprint"],
                 via="register-tofu", status=res["status"], body=res["body"])
            return Target(host, port, protocol, res["peerFingerprint"])
        pin = args.expect_fingerprint if (protocol == "https" and not peer.legacy) else None
        emit("target", address=host, port=port, protocol=protocol, fingerprint=args.expect_fingerprint,
             via="address")
        return Target(host, port, protocol, pin)
    want = args.to
    deadline = time.time() + args.discover_seconds
    with peer.found_cv:
        while True:
            for f in peer.found_list:
                if f.get("alias") != want and (f.get("fingerprint") or "").upper() != want.upper():
                    continue
                # 1.18 only lists confirmed devices (answered register / inbound register);
                # 1.17 also used bare announcements.
                if not peer.legacy and f["via"] == "multicast":
                    continue
                protocol = f.get("protocol") or "https"
                pin = f.get("fingerprint") if protocol == "https" and not peer.legacy else None
                emit("target", address=f["address"], port=f["port"], protocol=protocol,
                     fingerprint=f.get("fingerprint"), via=f["via"], alias=f.get("alias"))
                return Target(f["address"], f["port"], protocol, pin)
            remaining = deadline - time.time()
            if remaining <= 0:
                break
            peer.found_cv.wait(min(remaining, 0.5))
    conclude(peer, "not-found", args.expect or "ok", wanted=want)


def cmd_send(args):
    if not args.files and args.text is None:
        fail_setup("nothing-to-send")
    discovery = args.address is None
    if discovery and not args.to:
        fail_setup("need --to or --address")
    peer = common_setup(args, "send", server=not args.no_server, discovery=discovery)
    expected = args.expect or ("cancelled" if (args.cancel_after_bytes is not None or args.cancel_pending is not None)
                               else "checksum-mismatch" if args.bad_checksum else "ok")
    target = find_target(peer, args)

    if args.text is not None:
        data = args.text.encode()
        files = [SendFile(str(uuid.uuid4()), "%s.txt" % uuid.uuid4(), data=data)]
    else:
        files = collect_files(args.files)
    dtos = {}
    for f in files:
        d = {"id": f.id, "fileName": f.name, "size": f.size,
             "fileType": "text/plain" if args.text is not None else
             (mimetypes.guess_type(f.name)[0] or "application/octet-stream")}
        if not args.no_checksum and not peer.legacy:
            digest = f.sha256()
            if args.bad_checksum:
                digest = sha256_hex(b"localsend-peer-bad-checksum" + digest.encode())
            d["sha256"] = digest
        if args.text is not None:
            d["preview"] = args.text
        if f.path and not args.no_metadata:
            st = os.stat(f.path)
            d["metadata"] = {"modified": rfc3339_ns(st.st_mtime_ns), "accessed": rfc3339_ns(st.st_atime_ns)}
        dtos[f.id] = d
    body = {"info": peer.register_dto(), "files": dtos}
    query = {"pin": args.pin} if args.pin is not None else None
    st = {"target": target, "remoteSessionId": None, "abort": threading.Event(), "conns": [],
          "cancelledByReceiver": False}
    peer.send_state = st

    # prepare-upload (may wait for the receiver's decision: no timeout, like the 1.18 app)
    try:
        conn = Connection(peer, target, timeout=args.connect_timeout)
    except Exception as e:  # noqa: BLE001
        emit("prepare-upload", status=None, error=str(e), pinMismatch=isinstance(e, PinMismatch))
        conclude(peer, "pin-mismatch" if isinstance(e, PinMismatch) else "connect-failed", expected)
    conn.sock.settimeout(args.decision_timeout)  # 1.18 waits without timeout for the decision
    st["conns"].append(conn)
    if args.cancel_pending is not None:
        def cancel_pending():
            if st["abort"].wait(args.cancel_pending):
                return
            st["abort"].set()
            st["cancelledBySender"] = True
            try:  # 2.0/2.1 senders cancel a pending request with a session-less /cancel ...
                res = peer.request(target, "POST", API + "/cancel", timeout=5)
                emit("cancel-sent", sessionId=None, status=res["status"])
            except Exception as e:  # noqa: BLE001
                emit("cancel-sent", sessionId=None, status=None, error=str(e))
            conn.abort()  # ... and 1.18 simply drops the prepare-upload connection
        threading.Thread(target=cancel_pending, daemon=True).start()
    try:
        payload = json.dumps(body).encode()
        conn.start("POST", build_path(API + "/prepare-upload", query),
                   {"Content-Type": "application/json", "Content-Length": str(len(payload))})
        conn.send(payload)
        status, _h, rbody = conn.response()
    except Exception as e:  # noqa: BLE001
        if st.get("cancelledBySender"):
            emit("prepare-upload", status=None, error="cancelled while pending")
            conclude(peer, "cancelled", expected)
        emit("prepare-upload", status=None, error=str(e))
        conclude(peer, "connect-failed", expected)
    finally:
        conn.close()
        st["conns"].remove(conn)
    rjson = json_or_text(rbody)
    emit("prepare-upload", status=status, body=rjson, peerFingerprint=conn.peer_fingerprint, alpn=conn.alpn,
         tls=conn.tls_version)
    if st.get("cancelledBySender"):
        conclude(peer, "cancelled", expected, status=status)
    if status == 204:
        conclude(peer, "ok" if args.text is not None else "no-transfer", expected, status=204)
    if status != 200:
        outcome = {400: "bad-request", 401: "pin-required", 403: "declined", 409: "busy",
                   429: "too-many-attempts"}.get(status, "prepare-failed")
        conclude(peer, outcome, expected, status=status)
    if not isinstance(rjson, dict) or not isinstance(rjson.get("files"), dict) or \
            not isinstance(rjson.get("sessionId"), str):
        conclude(peer, "bad-response", expected, body=rjson)
    session_id = rjson["sessionId"]
    tokens = rjson["files"]
    st["remoteSessionId"] = session_id
    todo = [f for f in files if f.id in tokens]
    skipped = [f.id for f in files if f.id not in tokens]
    if skipped:
        emit("skipped", fileIds=skipped)

    sent_total = [0]
    results = {}
    lock = threading.Lock()
    cancel_done = threading.Event()

    def sender_cancel():
        # send_provider.dart cancelSession: abort running uploads, then POST /cancel?sessionId=
        st["abort"].set()
        st["cancelledBySender"] = True
        for c in list(st["conns"]):
            c.abort()
        try:
            res = peer.request(target, "POST", API + "/cancel", query={"sessionId": session_id}, timeout=5)
            emit("cancel-sent", sessionId=session_id, status=res["status"], bytesSent=sent_total[0])
        except Exception as e:  # noqa: BLE001
            emit("cancel-sent", sessionId=session_id, status=None, error=str(e), bytesSent=sent_total[0])
        cancel_done.set()

    def upload_one(f):
        chunked = args.body == "chunked" or (args.body is None and not peer.legacy)
        for attempt in range(1, args.attempts + 1):
            if st["abort"].is_set():
                results[f.id] = ("aborted", None)
                return
            res = upload_attempt(f, attempt, chunked)
            results[f.id] = res
            if res[1] != 422:
                return

    def upload_attempt(f, attempt, chunked):
        q = {"sessionId": session_id, "fileId": f.id, "token": tokens[f.id]}
        delta = args.body_delta
        length = max(f.size + delta, 0)
        try:
            c = Connection(peer, target, timeout=args.connect_timeout)
        except Exception as e:  # noqa: BLE001
            emit("uploaded", fileId=f.id, fileName=f.name, status=None, attempt=attempt, error=str(e),
                 pinMismatch=isinstance(e, PinMismatch))
            return ("error", None)
        c.sock.settimeout(args.io_timeout)
        st["conns"].append(c)
        sent = 0
        try:
            headers = {}
            if chunked:
                headers["Transfer-Encoding"] = "chunked"
            else:
                headers["Content-Length"] = str(length)
            if peer.legacy:
                headers["Content-Type"] = mimetypes.guess_type(f.name)[0] or "application/octet-stream"
            c.start("POST", build_path(API + "/upload", q), headers)

            def pieces():
                budget = length
                for b in f.chunks():
                    if budget <= 0:
                        return
                    b = b[:budget]
                    budget -= len(b)
                    yield b
                while budget > 0:
                    pad = b"\0" * min(budget, CHUNK)
                    budget -= len(pad)
                    yield pad

            for b in pieces():
                if st["abort"].is_set():
                    raise ConnectionAbortedError("aborted")
                limit = args.cancel_after_bytes
                if limit is not None:
                    with lock:
                        room = limit - sent_total[0]
                    if room <= 0:
                        raise ConnectionAbortedError("cancel")
                    if len(b) > room:
                        b = b[:room]
                c.send(("%x\r\n" % len(b)).encode() + b + b"\r\n" if chunked else b)
                sent += len(b)
                with lock:
                    sent_total[0] += len(b)
                    reached = limit is not None and sent_total[0] >= limit
                if reached:
                    raise ConnectionAbortedError("cancel")
            if chunked:
                c.send(b"0\r\n\r\n")
            status, _h, rbody = c.response()
            emit("uploaded", fileId=f.id, fileName=f.name, status=status, bytes=sent, attempt=attempt,
                 framing="chunked" if chunked else "length", body=json_or_text(rbody))
            return ("done", status)
        except ConnectionAbortedError as e:
            if str(e) == "cancel" and not cancel_done.is_set() and not st["abort"].is_set():
                emit("uploaded", fileId=f.id, fileName=f.name, status=None, bytes=sent, attempt=attempt,
                     error="cancelled by sender after %d bytes" % sent_total[0])
                sender_cancel()
            else:
                emit("uploaded", fileId=f.id, fileName=f.name, status=None, bytes=sent, attempt=attempt,
                     error="aborted")
            return ("aborted", None)
        except Exception as e:  # noqa: BLE001
            status = None
            if isinstance(e, OSError) and not st["abort"].is_set():
                try:  # the receiver may have answered early (e.g. 403) and closed the connection
                    c.sock.settimeout(2)
                    status, _h, rbody = c.response()
                except Exception:  # noqa: BLE001
                    status = None
            if status is not None:
                emit("uploaded", fileId=f.id, fileName=f.name, status=status, bytes=sent, attempt=attempt,
                     body=json_or_text(rbody), early=True)
                return ("done", status)
            emit("uploaded", fileId=f.id, fileName=f.name, status=None, bytes=sent, attempt=attempt,
                 error=str(e) or repr(e), cancelledByReceiver=st["cancelledByReceiver"])
            return ("error", None)
        finally:
            c.close()
            if c in st["conns"]:
                st["conns"].remove(c)

    queue_ = list(todo)
    qlock = threading.Lock()

    def worker():
        while True:
            with qlock:
                if not queue_:
                    return
                f = queue_.pop(0)
            upload_one(f)

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, args.parallel))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if not st.get("cancelledBySender") and not all(v[1] == 200 for v in results.values()):
        # the receiver's POST /cancel may still be on its way
        deadline = time.time() + 2
        while time.time() < deadline and not st["cancelledByReceiver"]:
            time.sleep(0.05)
    if st.get("cancelledBySender"):
        cancel_done.wait(10)
        conclude(peer, "cancelled", expected, results={k: v[1] for k, v in results.items()})
    if st["cancelledByReceiver"]:
        conclude(peer, "cancelled-by-receiver", expected, results={k: v[1] for k, v in results.items()})
    statuses = {k: v[1] for k, v in results.items()}
    if all(s == 200 for s in statuses.values()):
        outcome = "ok"
    elif any(s == 422 for s in statuses.values()):
        outcome = "checksum-mismatch"
    else:
        outcome = "upload-failed"
    conclude(peer, outcome, expected, sessionId=session_id, results=statuses)


# --------------------------------------------------------------------------- CLI

def add_common(p, server=True):
    p.add_argument("--home", default=os.path.join(os.path.expanduser("~"), ".localsend-test-peer"),
                   help="directory for cert.pem/key.pem (created with openssl if missing)")
    p.add_argument("--alias", default=None, help="device alias (default: 'Test Peer <random>')")
    p.add_argument("--device-model", default="Python", help="deviceModel (default Python)")
    p.add_argument("--device-type", default="headless", help="deviceType (mobile|desktop|web|headless|server)")
    p.add_argument("--fingerprint", default=None,
                   help="claim this fingerprint instead of the certificate's (to test mismatch handling)")
    p.add_argument("--protocol-version", default=None, help="the 'version' field (default 2.2, legacy 2.1)")
    p.add_argument("--legacy", action="store_true", help="behave like LocalSend <= 1.17 (protocol 2.1)")
    p.add_argument("--http", action="store_true", help="plain HTTP ('encryption off')")
    p.add_argument("--client-cert", action="store_true",
                   help="with --legacy: still present a client certificate (1.17 clients actually did)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="own HTTP(S) port (default 53317)")
    p.add_argument("--bind", action="append", help="server bind address (repeatable; default 0.0.0.0)")
    p.add_argument("--interface", action="append", help="network interface for multicast (repeatable; required)")
    p.add_argument("--multicast-group", default=MULTICAST_GROUP_V4)
    p.add_argument("--multicast-port", type=int, default=DEFAULT_PORT)
    p.add_argument("--ipv6", action="store_true", help="also use the IPv6 group ff12::fd3a:e420")
    p.add_argument("--no-announce", action="store_true", help="do not send the announcement burst")
    p.add_argument("--no-answer", action="store_true", help="do not answer announcements")
    p.add_argument("--discovery-timeout", type=float, default=DISCOVERY_TIMEOUT,
                   help="timeout of register requests answering announcements (default 0.5 s)")
    p.add_argument("--verbose", action="store_true")


def main(argv=None):
    ap = argparse.ArgumentParser(description="LocalSend v2.2 / legacy test peer (JSON events on stdout)")
    sub = ap.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("receive", help="run a receiver")
    add_common(r)
    r.add_argument("--dir", required=True, help="where received files are written")
    r.add_argument("--pin", default=None)
    r.add_argument("--decline", action="store_true", help="answer prepare-upload with 403")
    r.add_argument("--busy", action="store_true", help="answer prepare-upload with 409")
    r.add_argument("--reject-file", action="append", help="do not accept files matching this glob")
    r.add_argument("--delay-decision", type=float, default=0.0, help="seconds before answering prepare-upload")
    r.add_argument("--cancel-after-bytes", type=int, default=None,
                   help="cancel the session after N bytes were received (as the app's cancel button)")
    r.add_argument("--cancel-abort", action="store_true",
                   help="with --cancel-after-bytes: also drop the running upload connection")
    r.add_argument("--no-verify-checksum", action="store_true", help="do not answer 422 on sha256 mismatch")
    r.add_argument("--max-attempts", type=int, default=MAX_UPLOAD_ATTEMPTS,
                   help="upload attempts per file before a 422 fails it (default 3)")
    r.add_argument("--optional-client-cert", action="store_true",
                   help="request but do not require a client certificate (1.18 while web pages are served)")
    r.add_argument("--no-discovery", action="store_true", help="no multicast")
    r.add_argument("--once", action="store_true", help="exit after the first session ends")
    r.add_argument("--seconds", type=float, default=None, help="exit after this many seconds")
    r.add_argument("--expect", default=None, help="expected outcome (exit 0 iff it matches)")

    s = sub.add_parser("send", help="send files or a text")
    add_common(s)
    s.add_argument("files", nargs="*")
    s.add_argument("--to", help="receiver alias or fingerprint (found by multicast)")
    s.add_argument("--address", help="receiver HOST:PORT (no multicast)")
    s.add_argument("--expect-fingerprint", help="pin the receiver to this fingerprint (with --address)")
    s.add_argument("--text", default=None, help="send a text message")
    s.add_argument("--pin", default=None)
    s.add_argument("--parallel", type=int, default=2, help="parallel uploads (1.18 app: 2)")
    s.add_argument("--attempts", type=int, default=1, help="upload attempts per file while answered 422")
    s.add_argument("--cancel-after-bytes", type=int, default=None, help="cancel the session after N bytes sent")
    s.add_argument("--cancel-pending", type=float, default=None,
                   help="cancel while prepare-upload is pending, after S seconds")
    s.add_argument("--bad-checksum", action="store_true", help="announce a wrong sha256")
    s.add_argument("--no-checksum", action="store_true", help="announce no sha256")
    s.add_argument("--no-metadata", action="store_true", help="announce no file timestamps")
    s.add_argument("--body", choices=("chunked", "length"), default=None,
                   help="upload framing (default: chunked as 1.18, Content-Length with --legacy)")
    s.add_argument("--body-delta", type=int, default=0,
                   help="send announced size + N bytes (negative: fewer) to test the size check")
    s.add_argument("--no-server", action="store_true", help="do not run the own HTTP(S) server")
    s.add_argument("--discover-seconds", type=float, default=10.0)
    s.add_argument("--connect-timeout", type=float, default=10.0)
    s.add_argument("--io-timeout", type=float, default=60.0)
    s.add_argument("--decision-timeout", type=float, default=120.0,
                   help="how long to wait for the prepare-upload answer")
    s.add_argument("--expect", default=None, help="expected outcome (exit 0 iff it matches)")

    d = sub.add_parser("discover", help="announce, listen and list devices")
    add_common(d)
    d.add_argument("--seconds", type=float, default=5.0)
    d.add_argument("--no-server", action="store_true", help="do not run the own HTTP(S) server")

    a = sub.add_parser("announce", help="send announcements only")
    add_common(a)
    a.add_argument("--announce-flag", choices=("true", "false", "omit"), default="true")
    a.add_argument("--raw", default=None, help="send this JSON text instead")
    a.add_argument("--count", type=int, default=1)
    a.add_argument("--interval", type=float, default=1.0)
    a.add_argument("--burst", action="store_true", help="each time send the 100/500/2000 ms burst")
    a.add_argument("--linger", type=float, default=0.0, help="keep the sockets open this long (prints replies)")

    p = sub.add_parser("probe", help="query /info (v2, v1) and /register of HOST:PORT")
    add_common(p)
    p.add_argument("--address", required=True)
    p.add_argument("--expect-fingerprint", default=None)
    p.add_argument("--timeout", type=float, default=5.0)

    args = ap.parse_args(argv)
    if args.alias is None:
        args.alias = "Test Peer %04d" % random.randint(0, 9999)
    if args.device_type is not None and args.device_type.lower() == "none":
        args.device_type = None
    if args.device_model is not None and args.device_model.lower() == "none":
        args.device_model = None
    {"receive": cmd_receive, "send": cmd_send, "discover": cmd_discover, "announce": cmd_announce,
     "probe": cmd_probe}[args.cmd](args)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        emit("done", ok=False, outcome="interrupted")
        finish(EXIT_FAIL)
