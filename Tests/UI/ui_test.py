#!/usr/bin/env python3
"""`ferry ui`: the daemon's web page in real browsers — headless Chromium (Debian's chromium,
chromium-driver and python3-selenium) and headless Firefox ESR (Debian's firefox-esr, driven
over Marionette by PyPI's marionette_driver) — each driven as a person would: signed in by `ferry ui`'s
link, a peer that appears and goes, a file sent to it from the page, a send queued for a peer
that is away and delivered when it comes back, an incoming sender accepted and another declined
from the page; then the page's guards with raw HTTP (a wrong or used secret, no cookie, a
foreign Host or Origin, a connection from a non-loopback address), an accessibility check
(axe-core, from PyPI's axe-selenium-python) and screenshots at 390x844 and 1280x800. Run by
Tests/UI/run.sh in a network namespace that has only loopback (and an address the guard test
adds), inside scripts/harness/local.sh (a private avahi-daemon: peers are found by mDNS).

usage: ui_test.py FERRY_BINARY SCREENSHOT_DIR
"""
import base64
import hashlib
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

FERRY, SHOTS = sys.argv[1], sys.argv[2]
os.makedirs(SHOTS, exist_ok=True)
WORK = tempfile.mkdtemp(prefix="ferry-ui-")
os.chmod(WORK, 0o755)
failures = []
started = []


def check(ok, what):
    """One expectation, reported as scripts/test counts Swift Testing's (one line each)."""
    what = "ui: " + what.replace('"', "'")
    print(('\u2714 Test "%s" passed after 0.000 seconds.' if ok
           else '\u2718 Test "%s" failed after 0.000 seconds.') % what, flush=True)
    if not ok:
        failures.append(what)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def a_file(name, size):
    path = os.path.join(WORK, "src", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(os.urandom(size))
    return path


def wait_for(what, timeout):
    """Waits (up to `timeout` seconds) until `what()` is truthy; returns its last value. An
    element the page replaced while it was read (stale) counts as not yet."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = what()
        except Exception as error:  # noqa: BLE001
            if "stale" not in type(error).__name__.lower() and "stale" not in str(error).lower():
                raise
            value = None
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(0.2)


def end(proc, signum=signal.SIGINT, grace=20):
    """Ends a process this test started (by its PID), politely first."""
    if proc.poll() is None:
        proc.send_signal(signum)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Daemon:
    """A `ferry daemon` with a home, runtime folder and config of its own, its page on a port
    the system picks."""

    def __init__(self, name):
        self.base = tempfile.mkdtemp(prefix="d-", dir=WORK)
        self.home = os.path.join(self.base, "home")
        self.inbox = os.path.join(self.base, "in")
        os.makedirs(os.path.join(self.base, "run"))
        os.makedirs(self.inbox)
        self.config = os.path.join(self.base, "config.toml")
        with open(self.config, "w") as f:
            f.write('[receive]\ndir = "%s"\nname = "%s"\n[daemon]\nnotify = false\n'
                    % (self.inbox, name))
        self.socket = os.path.join(self.base, "run", "ferry", "api.sock")
        # The user's home the page's file picker lists: a few files, a folder, a hidden file,
        # and a link out of it.
        self.user_home = os.path.join(self.base, "user")
        album = os.path.join(self.user_home, "Pictures", "album")
        os.makedirs(album)
        for rel, size in {"Pictures/beach.jpg": 70_000, "Pictures/album/a.png": 3000,
                          "Pictures/album/b.png": 0, ".secret": 10}.items():
            with open(os.path.join(self.user_home, rel), "wb") as f:
                f.write(os.urandom(size))
        os.symlink("/etc", os.path.join(self.user_home, "etc-link"))
        # A desktop for "Open folder": DISPLAY set, and an xdg-open that writes down what it was
        # asked to open (this machine has no file manager to show).
        bin_dir = os.path.join(self.base, "bin")
        os.makedirs(bin_dir)
        self.opened = os.path.join(self.base, "opened.txt")
        with open(os.path.join(bin_dir, "xdg-open"), "w") as f:
            f.write('#!/bin/sh\nprintf "%%s\\n" "$1" >> %s\n' % self.opened)
        os.chmod(os.path.join(bin_dir, "xdg-open"), 0o755)
        self.env = dict(os.environ, FERRY_HOME=self.home, HOME=self.user_home,
                        XDG_RUNTIME_DIR=os.path.join(self.base, "run"), DISPLAY=":97",
                        PATH=bin_dir + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
        self.env.pop("WAYLAND_DISPLAY", None)
        self.log = open(os.path.join(self.base, "daemon.err"), "a")
        self.proc = subprocess.Popen(
            [FERRY, "daemon", "--config", self.config, "--ui-port", "0"], env=self.env,
            stdout=subprocess.DEVNULL, stderr=self.log)
        started.append(self.proc)
        status = wait_for(lambda: self.status(), 60)
        if not status:
            raise SystemExit("the daemon did not start: " + open(self.log.name).read())
        self.fingerprint = status["fingerprint"]
        self.port = status["ports"]["ui"]

    def status(self):
        out = self.ferry("status", "--json")
        return json.loads(out.stdout) if out.returncode == 0 else None

    def ferry(self, *arguments, timeout=60):
        return subprocess.run([FERRY, *arguments], env=self.env, capture_output=True,
                              text=True, timeout=timeout)

    def login(self):
        """A fresh sign-in link, as `ferry ui --print` gives it."""
        out = self.ferry("ui", "--print")
        lines = [line.strip() for line in out.stdout.splitlines() if "/login?token=" in line]
        return lines[0] if lines else None


class Chromium:
    """Headless Chromium through Debian's chromedriver and selenium."""

    name = "chromium"

    def __init__(self, width, height):
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size={width},{height}", "--no-first-run", "--disable-extensions",
                     "--disable-background-networking", "--disable-component-update",
                     "--user-data-dir=" + tempfile.mkdtemp(prefix="chromium-", dir=WORK)]:
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        if width < 500:
            options.add_experimental_option("mobileEmulation", {
                "deviceMetrics": {"width": width, "height": height, "pixelRatio": 2}})
        self.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)

    def get(self, url):
        self.driver.get(url)

    def url(self):
        return self.driver.current_url

    def all(self, selector, within=None):
        return (within or self.driver).find_elements(By.CSS_SELECTOR, selector)

    def one(self, selector, within=None):
        found = self.all(selector, within)
        return found[0] if found else None

    def script(self, code):
        return self.driver.execute_script(code)

    def run_async(self, code):
        return self.driver.execute_async_script(code)

    def screenshot(self, path):
        self.driver.save_screenshot(path)

    def element_shot(self, element, path):
        element.screenshot(path)

    def errors(self):
        return [e["message"] for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]

    def quit(self):
        self.driver.quit()


class Firefox:
    """Headless Firefox ESR (Debian's) driven over Marionette, its own remote protocol (Debian
    has no geckodriver): PyPI's marionette_driver, Mozilla's client. Console errors are read
    from what Firefox prints (devtools.console.stdout.content)."""

    name = "firefox"

    def __init__(self, width, height):
        from marionette_driver.marionette import Marionette
        profile = tempfile.mkdtemp(prefix="firefox-", dir=WORK)
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        prefs = {
            "marionette.port": port, "devtools.console.stdout.content": True,
            "browser.shell.checkDefaultBrowser": False, "app.update.disabledForTesting": True,
            "datareporting.policy.dataSubmissionEnabled": False,
            "toolkit.telemetry.reportingpolicy.firstRun": False,
            "browser.startup.homepage_override.mstone": "ignore",
            "network.captive-portal-service.enabled": False,
            "network.connectivity-service.enabled": False, "extensions.update.enabled": False,
            "browser.safebrowsing.update.enabled": False, "media.gmp-manager.updateEnabled": False,
            "remote.prefs.recommended": True,
        }
        with open(os.path.join(profile, "user.js"), "w") as f:
            for key, value in prefs.items():
                f.write("user_pref(%s, %s);\n" % (json.dumps(key), json.dumps(value)))
        self.log = open(os.path.join(profile, "console.log"), "w+")
        env = dict(os.environ, MOZ_HEADLESS="1", HOME=profile)
        self.proc = subprocess.Popen(
            ["/usr/bin/firefox-esr", "--headless", "--marionette", "--no-remote", "--profile",
             profile, "--width", str(width), "--height", str(height), "about:blank"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        started.append(self.proc)
        self.client = Marionette(host="127.0.0.1", port=port)
        self.client.start_session(timeout=120)
        self.client.set_window_rect(width=width, height=height)

    def get(self, url):
        self.client.navigate(url)

    def url(self):
        return self.client.get_url()

    def all(self, selector, within=None):
        return (within or self.client).find_elements("css selector", selector)

    def one(self, selector, within=None):
        found = self.all(selector, within)
        return found[0] if found else None

    def script(self, code):
        # In the page's own scope (sandbox None), as a page's script runs.
        return self.client.execute_script(code, sandbox=None)

    def run_async(self, code):
        return self.client.execute_async_script(code, sandbox=None, script_timeout=60000)

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.client.screenshot(full=False)))

    def element_shot(self, element, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.client.screenshot(element=element)))

    def errors(self):
        self.log.flush()
        self.log.seek(0)
        # The page's (its origin is named), not Firefox's own modules'.
        return [line.strip() for line in self.log if "http://127.0.0.1:" in line and (
            "JavaScript error" in line or "Content-Security-Policy" in line
            or "Content Security Policy" in line or "console.error" in line)]

    def quit(self):
        try:
            self.client.delete_session()
        except Exception:  # noqa: BLE001
            pass
        end(self.proc, signal.SIGTERM, 20)


def card(browser, list_id, name):
    """The card of `name` in list `list_id`, or None."""
    for item in browser.all("#%s > li" % list_id):
        title = browser.one(".title", item)
        if title is not None and title.text.startswith(name):
            return item
    return None


def text(browser, selector):
    found = browser.one(selector)
    return found.text if found is not None else ""


def receiver(name, home):
    """`ferry receive --yes` advertised by mDNS as `name`; (process, its folder)."""
    dest = os.path.join(WORK, "dest-" + name)
    os.makedirs(dest, exist_ok=True)
    env = dict(os.environ, FERRY_HOME=home)
    proc = subprocess.Popen(
        [FERRY, "receive", "--yes", "--json", "--name", name, "--dir", dest, "--port", "0"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    started.append(proc)
    line = proc.stdout.readline()
    check('"advertising"' in line, "peer %s starts (%s)" % (name, line[:60]))
    return proc, dest


def send_from_page(browser, list_id, name, path):
    """Types `path` into `name`'s card and presses its button."""
    def attempt():
        item = card(browser, list_id, name)
        browser.one("input[name=path]", item).send_keys(path)
        browser.one("form.send button", item).click()
        return True
    check(wait_for(attempt, 20), "%s: the path is typed and sent from the card" % name)


def sender(path, name):
    """`ferry send` of `path` to the daemon (by its name, found by mDNS), from a home of its
    own: it asks, and waits for the page's answer."""
    env = dict(os.environ, FERRY_HOME=os.path.join(WORK, "home-" + name),
               XDG_RUNTIME_DIR=os.path.join(WORK, "nowhere"))
    proc = subprocess.Popen([FERRY, "send", "--json", "--to", "ui-daemon", "--timeout", "90", path],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started.append(proc)
    return proc


def same(source, arrived):
    return os.path.exists(arrived) and sha(arrived) == sha(source)


def browser_files(b, tag, peer_name, dest):
    """Files the browser holds, sent as it reads them: one chosen with the browser's own file
    dialog (the card's file input), then a file and a folder dropped on the card (a drop's
    DataTransfer, the path a desktop's drag takes)."""
    picked = a_file("browser-%s/picked-%s.bin" % (tag, tag), 3_000_000)
    item = card(b, "peers", peer_name)
    inputs = b.all("input[type=file]", item) if item is not None else []
    check(len(inputs) == 2, "%s: the card offers the browser's dialog for files and a folder" % tag)
    if len(inputs) != 2:
        return
    # (Firefox's Marionette types only into what a person could reach: the page's hidden input
    # is shown while the file is given, as the dialog it opens would give it.)
    b.script("document.querySelectorAll('#peers input[type=file]').forEach(i => { i.hidden = false; })")
    inputs[0].send_keys(picked)
    b.script("document.querySelectorAll('#peers input[type=file]').forEach(i => { i.hidden = true; })")
    check(wait_for(lambda: same(picked, os.path.join(dest, os.path.basename(picked))), 60),
          "%s: a file chosen with the browser's dialog arrives byte-identical" % tag)
    check(wait_for(lambda: "Sent to " in card(b, "peers", peer_name).text, 30),
          "%s: the card says it was sent (%r)" % (tag, card(b, "peers", peer_name).text[-160:]))
    dropped = a_file("browser-%s/dropped-%s.bin" % (tag, tag), 1_500_000)
    tree = "tree-" + tag
    parts = {"a.txt": 5000, "sub/b.bin": 700_000, "sub/deeper/c.dat": 0}
    for rel, size in parts.items():
        a_file(os.path.join(tree, rel), size)
    os.makedirs(os.path.join(WORK, "src", tree, "sub", "empty"), exist_ok=True)
    folder_path = os.path.join(WORK, "src", tree)
    if tag == "chromium":
        # A drag from the desktop, as Chromium's input layer gets one (DevTools'
        # Input.dispatchDragEvent with paths): the drop's entries are walked, folders too.
        box = b.script("""
          const card = Array.from(document.querySelectorAll("#peers > li"))
            .find(li => li.querySelector(".title").textContent.startsWith(%s));
          card.scrollIntoView({block: "center"});
          const r = card.getBoundingClientRect();
          return [r.left + r.width / 2, r.top + r.height / 2];""" % json.dumps(peer_name))
        data = {"items": [], "files": [dropped, folder_path], "dragOperationsMask": 1}
        for kind in ["dragEnter", "dragOver", "drop"]:
            b.driver.execute_cdp_cmd("Input.dispatchDragEvent",
                                     {"type": kind, "x": box[0], "y": box[1], "data": data})
        count = 2
    else:
        # Firefox's driver has no desktop drag: a drop's DataTransfer made in the page, of two
        # files (it cannot give a folder to a page either).
        b.script("""
          const input = document.createElement("input");
          input.type = "file";
          input.id = "drop-files";
          input.multiple = true;
          document.body.append(input);""")
        b.one("#drop-files").send_keys(dropped + "\n" + os.path.join(folder_path, "a.txt"))
        count = b.script("""
          const card = Array.from(document.querySelectorAll("#peers > li"))
            .find(li => li.querySelector(".title").textContent.startsWith(%s));
          const transfer = new DataTransfer();
          for (const file of document.getElementById("drop-files").files) transfer.items.add(file);
          for (const kind of ["dragenter", "dragover", "drop"])
            card.dispatchEvent(new DragEvent(kind, {bubbles: true, cancelable: true, dataTransfer: transfer}));
          document.getElementById("drop-files").remove();
          return transfer.items.length;""" % json.dumps(peer_name))
    check(count == 2, "%s: two things are dropped on the card (%s)" % (tag, count))
    wanted = {dropped: os.path.basename(dropped)}
    if tag == "chromium":
        for rel in parts:
            wanted[os.path.join(folder_path, rel)] = os.path.join(tree, rel)
    else:
        wanted[os.path.join(folder_path, "a.txt")] = "a.txt"
    check(wait_for(lambda: all(same(src, os.path.join(dest, rel)) for src, rel in wanted.items()), 60),
          "%s: what is dropped on a device arrives byte-identical%s" % (
              tag, ", a folder's tree kept, its empty folder made" if tag == "chromium" else ""))
    if tag == "chromium":
        check(os.path.isdir(os.path.join(dest, tree, "sub", "empty")), "chromium: the dropped folder's empty folder is made")
    check(wait_for(lambda: "delivered" in text(b, "#sends"), 20), "%s: the outbox lists the upload delivered" % tag)


def page_session(daemon):
    """Raw HTTP headers of a signed-in page (cookie, key, its Origin)."""
    url = daemon.login()
    signed = request(daemon.port, url.split(str(daemon.port), 1)[1])
    cookie = signed[1].get("set-cookie", "").split(";")[0]
    return {"Cookie": cookie, "X-Ferry-Key": signed[1].get("location", "")[6:],
            "Origin": "http://127.0.0.1:%d" % daemon.port}


def uploads_by_hand(daemon, peer_name, dest):
    """The upload API as a hostile or broken client uses it: sizes that lie, files out of
    order, and a body cut off — which must cancel the send, never give the receiver a
    shortened file; an empty folder is created."""
    jar = page_session(daemon)
    port = daemon.port

    def start(files):
        body = json.dumps({"to": peer_name, "files": files}).encode()
        answer = request(port, "/api/v1/uploads", method="POST", body=body,
                         headers=dict(jar, **{"Content-Type": "application/json",
                                              "Content-Length": str(len(body))}))
        return answer[0], json.loads(answer[2]) if answer and answer[2] else {}

    def put(upload, index, data, length=None):
        return request(port, "/api/v1/uploads/%s/files/%d" % (upload, index), method="PUT", body=data,
                       headers=dict(jar, **{"Content-Type": "application/octet-stream",
                                            "Content-Length": str(len(data) if length is None else length)}))

    status, bad = start([{"path": "../escape", "size": 1}])
    check(status == 400, "upload: a path out of the folder is refused (%s %r)" % (status, bad))
    status, bad = start([{"path": "x", "size": -1}])
    check(status == 400, "upload: a negative size is refused (%s)" % status)
    status, bad = start([{"path": "twice", "size": 1}, {"path": "twice", "size": 1}])
    check(status == 400, "upload: a path named twice is refused (%s)" % status)
    status, send = start([{"path": "empty-folder", "size": 0, "folder": True},
                          {"path": "small.txt", "size": 11}])
    check(status == 201 and send.get("fileCount") == 2, "upload: started (%s %r)" % (status, send))
    upload = send.get("id", "0" * 16)
    folder = put(upload, 0, b"")
    check(folder and folder[0] == 404, "upload: an empty folder takes no bytes (%s)" % (folder and folder[0]))
    wrong = put(upload, 1, b"12345")
    check(wrong and wrong[0] == 400, "upload: a length other than the size declared: 400 (%s)" % (wrong and wrong[0]))
    right = put(upload, 1, b"hello world")
    check(right and right[0] == 204, "upload: the file's bytes are taken (%s %r)" % (right and right[0], right and right[2][:200]))
    again = put(upload, 1, b"hello world")
    check(again and again[0] == 409, "upload: a file sent twice: 409 (%s)" % (again and again[0]))
    check(wait_for(lambda: os.path.isdir(os.path.join(dest, "empty-folder"))
                   and open(os.path.join(dest, "small.txt"), "rb").read() == b"hello world"
                   if os.path.exists(os.path.join(dest, "small.txt")) else False, 30),
          "upload: the file arrives, and the empty folder is made")

    # Cut off: 300 kB of a file said to be 1 MB, then the connection closes.
    status, send = start([{"path": "cut.bin", "size": 1_000_000}])
    upload = send.get("id", "0" * 16)
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    head = ("PUT /api/v1/uploads/%s/files/0 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % (upload, port)
            + "".join("%s: %s\r\n" % item for item in jar.items())
            + "Content-Type: application/octet-stream\r\nContent-Length: 1000000\r\n\r\n")
    sock.sendall(head.encode() + os.urandom(300_000))
    time.sleep(2)
    sock.close()

    def state():
        answer = request(port, "/api/v1/sends/" + upload, headers=jar)
        return json.loads(answer[2]).get("state") if answer and answer[0] == 200 else None
    check(wait_for(lambda: state() == "cancelled", 30),
          "upload: a body cut off cancels its send (%s)" % state())
    time.sleep(1)
    check(not os.path.exists(os.path.join(dest, "cut.bin")),
          "upload: the receiver is never given the shortened file")


def test_page(daemon, kind):
    """The page in one browser, as a person uses it."""
    b = kind(1280, 800)
    tag = b.name
    try:
        url = daemon.login()
        check(url is not None and url.startswith("http://127.0.0.1:%d/login?token=" % daemon.port),
              "%s: ferry ui --print gives a loopback link (%s)" % (tag, url))
        b.get(url)
        live = wait_for(lambda: text(b, "#connection") == "Live", 30)
        check(live, "%s: the page signs in and follows the events (%s)" % (tag, text(b, "#connection")))
        check(b.url() == "http://127.0.0.1:%d/" % daemon.port,
              "%s: the secret leaves the address bar (%s)" % (tag, b.url()))
        check(wait_for(lambda: text(b, "#name") == "ui-daemon", 10), "%s: this machine's name is shown" % tag)
        check(" ".join(daemon.fingerprint[i:i + 4] for i in range(0, 64, 4)) in text(b, "#machine"),
              "%s: this machine's fingerprint is shown in full" % tag)
        resources = b.script("return performance.getEntriesByType('resource').map(e => e.name)")
        check(all(r.startswith("http://127.0.0.1:%d/" % daemon.port) for r in resources),
              "%s: nothing is loaded from elsewhere %r" % (tag, resources))
        check(card(b, "peers", "ui-daemon") is None, "%s: this machine is not listed as a device around" % tag)
        # The pairing code, read back by zbarimg from what the browser drew.
        code = b.one("figure.qr img")
        check(wait_for(lambda: b.script("return document.querySelector('figure.qr img').naturalWidth") > 0, 10),
              "%s: the pairing QR code is drawn" % tag)
        shot = os.path.join(WORK, "qr-%s.png" % tag)
        b.script("document.querySelector('figure.qr').scrollIntoView()")
        b.element_shot(code, shot)
        b.script("window.scrollTo(0, 0)")
        read = subprocess.run(["zbarimg", "--quiet", "--raw", shot], capture_output=True, text=True)
        check(read.stdout.strip() == "ferry trust %s --name 'ui-daemon'" % daemon.fingerprint,
              "%s: it reads as the command that trusts this machine (%r)" % (tag, read.stdout.strip()[:100]))

        # A peer comes, is sent a file from the page, goes, and comes back for a queued send.
        peer_name = "ui-peer-" + tag
        peer_home = os.path.join(WORK, "home-" + peer_name)
        peer, dest = receiver(peer_name, peer_home)
        check(wait_for(lambda: card(b, "peers", peer_name), 30) is not None,
              "%s: a peer that appears is listed, by the event stream" % tag)
        b.screenshot(os.path.join(SHOTS, "ui-%s-desktop-1-peer.png" % tag))
        first = a_file("first-%s.bin" % tag, 300_000)
        send_from_page(b, "peers", peer_name, first)
        check(wait_for(lambda: os.path.exists(os.path.join(dest, os.path.basename(first)))
                       and sha(os.path.join(dest, os.path.basename(first))) == sha(first), 60),
              "%s: a file sent from the page arrives byte-identical" % tag)
        check(wait_for(lambda: "delivered" in text(b, "#sends"), 60),
              "%s: the outbox shows it delivered, under the peer's name" % tag)
        check(wait_for(lambda: peer_name in text(b, "#sends"), 10),
              "%s: the outbox names the peer (%r)" % (tag, text(b, "#sends")[:200]))

        # Files and a folder chosen in the page's own file picker (the user's home), sent
        # from disk.
        def choose():
            b.one("button.choose", card(b, "peers", peer_name)).click()
            return True
        wait_for(choose, 10)
        check(wait_for(lambda: "Pictures/" in text(b, "#picker-list"), 10)
              and ".secret" not in text(b, "#picker-list"),
              "%s: the picker lists the home, hidden names left out" % tag)
        wait_for(lambda: b.one("button[aria-label='Open Pictures']").click() or True, 10)
        check(wait_for(lambda: "beach.jpg" in text(b, "#picker-list"), 10),
              "%s: a folder opens in the picker" % tag)
        for label in b.all("#picker-list label"):
            if label.text.startswith("beach.jpg") or label.text.startswith("album/"):
                b.one("input", label).click()
        check("Send 2 items" in text(b, "#picker-send"), "%s: two items chosen" % tag)
        b.screenshot(os.path.join(SHOTS, "ui-%s-desktop-picker.png" % tag))
        b.one("#picker-send").click()
        check(wait_for(lambda: "see the outbox" in text(b, "#picker-status"), 20),
              "%s: the picker says it is sending" % tag)
        b.one("#picker-close").click()
        pictures = os.path.join(daemon.user_home, "Pictures")
        wanted = {rel: sha(os.path.join(pictures, rel)) for rel in ["beach.jpg", "album/a.png", "album/b.png"]}
        check(wait_for(lambda: all(os.path.exists(os.path.join(dest, rel)) and sha(os.path.join(dest, rel)) == digest
                                   for rel, digest in wanted.items()), 60),
              "%s: a file and a folder chosen in the picker arrive byte-identical" % tag)
        browser_files(b, tag, peer_name, dest)
        if tag == "chromium":
            uploads_by_hand(daemon, peer_name, dest)
        end(peer)
        check(wait_for(lambda: card(b, "peers", peer_name) is None, 30),
              "%s: a peer that goes is dropped from the list" % tag)
        check(wait_for(lambda: card(b, "known", peer_name) is not None, 10),
              "%s: it is listed as known, not around" % tag)
        later = a_file("later-%s.bin" % tag, 120_000)
        send_from_page(b, "known", peer_name, later)
        check(wait_for(lambda: "waiting for the device" in text(b, "#sends"), 20),
              "%s: a send for a peer away waits in the outbox" % tag)
        peer, dest = receiver(peer_name, peer_home)
        check(wait_for(lambda: os.path.exists(os.path.join(dest, os.path.basename(later)))
                       and sha(os.path.join(dest, os.path.basename(later))) == sha(later), 90),
              "%s: the outbox entry made on the page is delivered when its peer comes back" % tag)
        end(peer)

        # Incoming: one accepted, one declined, from the page.
        for answer in ["Accept", "Decline"]:
            path = a_file("incoming-%s-%s.bin" % (tag, answer.lower()), 200_000)
            proc = sender(path, "%s-%s" % (tag, answer.lower()))
            offer = wait_for(lambda: b.all("#offers > li"), 60)
            check(bool(offer), "%s: %s: the waiting sender is shown" % (tag, answer))
            if not offer:
                end(proc)
                continue
            shown = wait_for(lambda: b.all("#offers > li")[0].text, 10) or ""
            check("wants to send you 1 file" in shown and "Check that the sender sees this code" in shown,
                  "%s: %s: who, what and the code are shown (%r)" % (tag, answer, shown[:100]))
            if answer == "Accept":
                b.screenshot(os.path.join(SHOTS, "ui-%s-desktop-2-asking.png" % tag))
            wait_for(lambda: b.one("button[aria-label^='%s']" % answer, b.all("#offers > li")[0]).click() or True, 10)
            try:
                proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                end(proc)
            arrived = os.path.join(daemon.inbox, os.path.basename(path))
            if answer == "Accept":
                check(proc.returncode == 0 and os.path.exists(arrived) and sha(arrived) == sha(path),
                      "%s: accepted on the page: the file arrives byte-identical (exit %s)" % (tag, proc.returncode))
            else:
                check(proc.returncode == 4 and not os.path.exists(arrived),
                      "%s: declined on the page: the sender is told (exit %s), nothing written" % (tag, proc.returncode))
            check(wait_for(lambda: not b.all("#offers > li"), 20),
                  "%s: %s: the question leaves the page" % (tag, answer))
        check(wait_for(lambda: "declined" in text(b, "#history").lower(), 20),
              "%s: the history lists the declined sender" % tag)

        # A transfer under way, cancelled from the page: standard input sent as it is read,
        # kept open so that it stays under way until the page's Cancel.
        env = dict(os.environ, FERRY_HOME=os.path.join(WORK, "home-slow-" + tag),
                   XDG_RUNTIME_DIR=os.path.join(WORK, "nowhere"))
        slow = subprocess.Popen([FERRY, "send", "--json", "--to", "ui-daemon", "--timeout", "90",
                                 "--stdin-name", "slow-%s.bin" % tag, "-"], env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        started.append(slow)
        offer = wait_for(lambda: b.all("#offers > li"), 60)
        if offer:
            wait_for(lambda: b.one("button[aria-label^='Accept']", b.all("#offers > li")[0]).click() or True, 10)
        slow.stdin.write(os.urandom(100_000))
        slow.stdin.flush()
        row = wait_for(lambda: b.one("#transfers button[aria-label^='Cancel the transfer']"), 30)
        check(row is not None, "%s: a transfer coming in is listed under way, with Cancel" % tag)
        if row is not None:
            wait_for(lambda: b.one("#transfers button[aria-label^='Cancel the transfer']").click() or True, 10)
        try:
            slow.wait(timeout=60)
        except subprocess.TimeoutExpired:
            end(slow)
        slow.stdin.close()
        check(slow.returncode not in (0, None)
              and not os.path.exists(os.path.join(daemon.inbox, "slow-%s.bin" % tag)),
              "%s: cancelled from the page: the sender stops (exit %s), nothing is placed"
              % (tag, slow.returncode))
        check(wait_for(lambda: not b.all("#transfers button[aria-label^='Cancel the transfer']"), 20),
              "%s: and it leaves the list" % tag)

        # The switch: trusted devices only — a new sender is declined unasked; then ask again.
        def accept_mode():
            status = daemon.status()
            return status["receiving"]["accept"] if status else None
        b.one("#accept input[value='trusted-only']").click()
        check(wait_for(lambda: accept_mode() == "trusted-only", 10),
              "%s: the switch sets trusted devices only (%s)" % (tag, accept_mode()))
        stranger = sender(a_file("stranger-%s.bin" % tag, 1000), "stranger-" + tag)
        try:
            stranger.wait(timeout=60)
        except subprocess.TimeoutExpired:
            end(stranger)
        check(stranger.returncode == 4 and not b.all("#offers > li"),
              "%s: then a sender nobody trusts is declined unasked (exit %s)" % (tag, stranger.returncode))
        b.one("#accept input[value='ask']").click()
        check(wait_for(lambda: accept_mode() == "ask", 10),
              "%s: and back to asking (%s)" % (tag, accept_mode()))

        # Trust, rename and forget the peer, from its card.
        def manage(action, name=None):
            item = card(b, "known", peer_name) or card(b, "known", "Desk " + tag)
            details = b.one("details.manage", item)
            if not details.get_attribute("open"):
                b.one("summary", details).click()
            if name is not None:
                field = b.one("input[name=name]", details)
                field.clear()
                field.send_keys(name)
            buttons = [x for x in b.all("button", details) if x.text == action]
            buttons[0].click()
            return True
        check(wait_for(lambda: manage("Trust", "Desk " + tag), 10)
              and wait_for(lambda: card(b, "known", "Desk " + tag) is not None
                           and "trusted" in card(b, "known", "Desk " + tag).text, 20),
              "%s: a peer trusted from the page, under the name given" % tag)
        known = daemon.ferry("peers", "--json")
        check(any(json.loads(line).get("name") == "Desk " + tag and json.loads(line).get("trusted")
                  for line in known.stdout.splitlines() if line.strip()),
              "%s: ferry peers shows it trusted, by that name" % tag)
        check(wait_for(lambda: manage("Rename", "Desk " + tag + " 2"), 10)
              and wait_for(lambda: card(b, "known", "Desk " + tag + " 2") is not None, 20),
              "%s: renamed from the page" % tag)
        check(wait_for(lambda: manage("Forget"), 10)
              and wait_for(lambda: card(b, "known", "Desk " + tag) is None, 20),
              "%s: forgotten from the page" % tag)
        b.screenshot(os.path.join(SHOTS, "ui-%s-desktop-3-history.png" % tag))
        b.one("#open-folder").click()
        check(wait_for(lambda: os.path.exists(daemon.opened)
                       and daemon.inbox in open(daemon.opened).read().splitlines(), 10)
              and wait_for(lambda: "Opened" in text(b, "#open-status"), 10),
              "%s: Open folder opens the folder files arrive in (xdg-open %s)" % (tag, daemon.inbox))
        errors = b.errors()
        check(not errors, "%s: no JavaScript error or refused resource in the console %r" % (tag, errors[:3]))
        accessibility(b, tag + " desktop")
    finally:
        b.quit()

    # Phone-sized, signed in again (a link works once: the first one is used up).
    b = kind(390, 844)
    try:
        b.get(daemon.login())
        wait_for(lambda: text(b, "#connection") == "Live", 30)
        wait_for(lambda: card(b, "known", "ui-peer-" + tag) is not None, 10)
        # (Headless Firefox's windows are at least 450 px wide: its phone is that narrow.)
        width, screen = b.script(
            "return [document.documentElement.scrollWidth, window.innerWidth]")
        check(width <= screen and screen <= 500,
              "%s: phone: nothing wider than the screen (%d px in %d)" % (tag, width, screen))
        b.screenshot(os.path.join(SHOTS, "ui-%s-phone-1.png" % tag))
        b.script("document.body.style.zoom = '200%'")
        b.screenshot(os.path.join(SHOTS, "ui-%s-phone-2-zoom200.png" % tag))
        accessibility(b, tag + " phone")
    finally:
        b.quit()


def accessibility(b, what):
    """axe-core's rules (the copy PyPI's axe-selenium-python carries) on the page as it is: no
    serious or critical violation."""
    try:
        import axe_selenium_python
    except ImportError as error:
        check(False, "%s: axe-core is installed (%s)" % (what, error))
        return
    source = os.path.join(os.path.dirname(axe_selenium_python.__file__), "node_modules", "axe-core", "axe.min.js")
    with open(source) as f:
        b.script(f.read())
    results = b.run_async(
        "const done = arguments[arguments.length - 1]; axe.run().then(r => done(r), e => done({error: String(e)}));")
    if results.get("error"):
        check(False, "%s: axe-core ran (%s)" % (what, results["error"]))
        return
    bad = [(v["id"], v["impact"], len(v["nodes"])) for v in results["violations"]
           if v["impact"] in ("serious", "critical")]
    check(not bad, "%s: axe-core finds no serious violation %r" % (what, bad))


def request(port, path, method="GET", host=None, headers=None, source=None, body=None, ip="127.0.0.1"):
    """One raw request to the page's server: (status, headers, body), None when the
    connection is closed without an answer, "timeout" when nothing came in 10 s."""
    sock = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(10)
    if source:
        sock.bind((source, 0))
    try:
        sock.connect((ip, port))
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.sock = sock
        all_headers = {"Host": host or "127.0.0.1:%d" % port}
        all_headers.update(headers or {})
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in all_headers.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    except socket.timeout:
        return "timeout"
    except (ConnectionError, http.client.RemoteDisconnected):
        return None
    finally:
        sock.close()


def test_guards(daemon):
    port = daemon.port
    status = request(port, "/login?token=" + "0" * 32)
    check(status and status[0] == 403, "a wrong secret is refused (%s)" % (status and status[0]))
    url = daemon.login()
    path = url.split(str(port), 1)[1]
    signed = request(port, path)
    cookie = signed[1].get("set-cookie", "") if signed else ""
    check(signed and signed[0] == 303 and "HttpOnly" in cookie and "SameSite=Strict" in cookie,
          "the secret becomes an HttpOnly, SameSite=Strict cookie (%r)" % cookie)
    location = signed[1].get("location", "") if signed else ""
    check(location.startswith("/#key=") and len(location) == 6 + 32,
          "and a key for the page, in the fragment only (%r)" % location)
    again = request(port, path)
    check(again and again[0] == 403, "a secret works once (%s)" % (again and again[0]))
    jar = {"Cookie": cookie.split(";")[0], "X-Ferry-Key": location[6:]}
    cookie_only = request(port, "/api/v1/status", headers={"Cookie": jar["Cookie"]})
    check(cookie_only and cookie_only[0] == 401,
          "the cookie alone (what another port's page would get) opens no API: 401 (%s)"
          % (cookie_only and cookie_only[0]))
    key_only = request(port, "/api/v1/status", headers={"X-Ferry-Key": jar["X-Ferry-Key"]})
    check(key_only and key_only[0] == 401, "the key alone: 401 (%s)" % (key_only and key_only[0]))
    page_only = request(port, "/", headers={"Cookie": jar["Cookie"]})
    check(page_only and page_only[0] == 200, "the cookie opens the page itself (%s)"
          % (page_only and page_only[0]))
    events = request(port, "/events?key=" + "0" * 32, headers={"Cookie": jar["Cookie"]})
    check(events and events[0] == 401, "the event stream with another key: 401 (%s)"
          % (events and events[0]))
    six = request(port, "/api/v1/status", headers=jar, ip="::1", host="[::1]:%d" % port)
    check(six and six[0] == 200, "the same on ::1 (%s)" % (six and six[0]))
    good = request(port, "/api/v1/status", headers=jar)
    check(good and good[0] == 200 and json.loads(good[2])["name"] == "ui-daemon",
          "with the cookie, the API answers")
    csp = good[1].get("content-security-policy", "") if good else ""
    check("default-src 'none'" in csp and "frame-ancestors 'none'" in csp,
          "every answer has a strict Content-Security-Policy")
    none = request(port, "/api/v1/status")
    check(none and none[0] == 401, "without the cookie: 401 (%s)" % (none and none[0]))
    forged = request(port, "/api/v1/status", headers={"Cookie": "ferry-ui-%d=%s" % (port, "0" * 32)})
    check(forged and forged[0] == 401, "a made-up cookie: 401 (%s)" % (forged and forged[0]))
    rebound = request(port, "/api/v1/status", host="attacker.example:%d" % port, headers=jar)
    check(rebound and rebound[0] == 403, "a foreign Host (DNS rebinding): 403 (%s)" % (rebound and rebound[0]))
    foreign = request(port, "/api/v1/sends", method="POST",
                      headers=dict(jar, Origin="http://attacker.example", **{"Content-Type": "application/json", "Content-Length": "2"}))
    check(foreign and foreign[0] == 403, "a foreign Origin: 403 (%s)" % (foreign and foreign[0]))
    other_port = request(port, "/api/v1/offers/0123456789abcdef/decline", method="POST",
                         headers=dict(jar, Origin="http://127.0.0.1:1"))
    check(other_port and other_port[0] == 403,
          "another port's page on this machine (same site, other origin): 403 (%s)" % (other_port and other_port[0]))
    no_origin = request(port, "/api/v1/offers/0123456789abcdef/decline", method="POST", headers=jar)
    check(no_origin and no_origin[0] == 403, "a change without an Origin: 403 (%s)" % (no_origin and no_origin[0]))
    same = request(port, "/api/v1/offers/0123456789abcdef/decline", method="POST",
                   headers=dict(jar, Origin="http://127.0.0.1:%d" % port))
    check(same and same[0] == 404, "the page's own Origin reaches the API (%s)" % (same and same[0]))
    own = dict(jar, Origin="http://127.0.0.1:%d" % port, **{"Content-Type": "application/json"})
    key = "AB" * 32
    for target, body, want, what in [
            ("/api/v1/peers/ABCD/trust", b"{}", 400, "a key's prefix"),
            ("/api/v1/peers/%s/trust" % ("G" * 64), b"{}", 400, "a key that is not hex"),
            ("/api/v1/peers/%s/trust" % key, b'{"name":"a\\u001b[31mb"}', 400, "a name with an escape"),
            ("/api/v1/peers/%s/trust" % key, b'{"name":"   "}', 400, "a blank name"),
            ("/api/v1/peers/%s/trust" % key, json.dumps({"name": "x" * 257}).encode(), 400, "a name of 257 bytes"),
            ("/api/v1/peers/%s/trust" % key, b'{"name":"ok","extra":1}', 400, "an unknown field")]:
        answer = request(port, target, method="POST", headers=dict(own, **{"Content-Length": str(len(body))}), body=body)
        check(answer and answer[0] == want, "trusting %s: %d (%s)" % (what, want, answer and answer[0]))
    for target, want, what in [
            ("/api/v1/files?path=/etc", 403, "a folder outside the home"),
            ("/api/v1/files?path=%s/etc-link" % daemon.user_home, 403, "a link out of the home"),
            ("/api/v1/files?path=%s/Pictures/../.." % daemon.user_home, 400, "a path with .."),
            ("/api/v1/files?path=Pictures", 400, "a relative path"),
            ("/api/v1/files?path=%s/nothing" % daemon.user_home, 400, "a folder that is not there")]:
        answer = request(port, target, headers=jar)
        check(answer and answer[0] == want, "listing %s: %d (%s)" % (what, want, answer and answer[0]))
    listed = request(port, "/api/v1/files", headers=jar)
    names = [e["name"] for e in json.loads(listed[2])["entries"]] if listed and listed[0] == 200 else []
    check(names[:1] == ["Pictures"] and ".secret" not in names,
          "the home is listed, folders first, hidden names left out (%s)" % names)
    for body in [b'{"accept":"yes"}', b'{"accept":"everyone"}', b'{}']:
        answer = request(port, "/api/v1/receiving/accept", method="PUT",
                         headers=dict(own, **{"Content-Length": str(len(body))}), body=body)
        check(answer and answer[0] == 400, "switching to %s: 400 (%s)" % (body.decode(), answer and answer[0]))
    gone = request(port, "/api/v1/peers/%s" % key, method="DELETE", headers=own)
    check(gone and gone[0] == 404, "forgetting a key nobody knows: 404 (%s)" % (gone and gone[0]))
    cross = request(port, "/api/v1/history", headers=dict(jar, **{"Sec-Fetch-Site": "cross-site"}))
    check(cross and cross[0] == 403, "a cross-site read: 403 (%s)" % (cross and cross[0]))
    # Another interface: nothing listens there, and a loopback connection from its address is
    # closed unanswered.
    # (A veth pair with both ends in this test's namespace: this kernel has no dummy links.)
    subprocess.run(["ip", "link", "add", "ferry-ui0", "type", "veth", "peer", "name", "ferry-ui1"],
                   check=False)
    subprocess.run(["ip", "addr", "add", "10.213.0.1/24", "dev", "ferry-ui0"], check=False)
    subprocess.run(["ip", "link", "set", "ferry-ui1", "up"], check=False)
    subprocess.run(["ip", "link", "set", "ferry-ui0", "up"], check=False)
    try:
        probe = socket.socket()
        probe.settimeout(5)
        refused = probe.connect_ex(("10.213.0.1", port))
        probe.close()
        check(refused != 0, "nothing listens on another interface (connect: %d)" % refused)
        outsider = request(port, "/api/v1/status", headers=jar, source="10.213.0.1")
        check(outsider is None, "a connection from a non-loopback address is closed unanswered (%r)"
              % (outsider and outsider[0]))
    finally:
        subprocess.run(["ip", "link", "del", "ferry-ui0"], check=False)
    # Another user of this machine: closed before a byte is read (its link, its cookie or its
    # connections would otherwise be as good as the daemon's user's).
    other = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
         "import socket,sys\ns=socket.create_connection(('127.0.0.1',%d),5)\n"
         "s.sendall(b'GET /api/v1/status HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\nCookie: %s\\r\\n\\r\\n')\n"
         "s.settimeout(10)\ntry:\n  sys.stdout.write(repr(s.recv(100)))\nexcept Exception as e:\n  sys.stdout.write(repr(e))"
         % (port, port, jar["Cookie"] + "\\r\\nX-Ferry-Key: " + jar["X-Ferry-Key"])],
        capture_output=True, text=True, timeout=30)
    check(other.stdout in ("b''",) or "Reset" in other.stdout,
          "another user's connection is closed unanswered, its cookie or not (%s)" % other.stdout[:80])
    off = subprocess.run([FERRY, "ui", "--print", "--no-start", "--socket", "/nonexistent/api.sock"],
                         capture_output=True, text=True, timeout=30)
    check(off.returncode == 2 and "daemon" in off.stderr,
          "ferry ui --no-start without a daemon: exit 2, in words (%s)" % off.stderr.strip()[:120])


def test_starts_daemon(port_taken=False):
    """`ferry ui` where no daemon runs (a person clicking the menu entry): it starts one in the
    background, and its link works; it answers LocalSend apps too — unless their port is taken
    (a LocalSend app on this machine), and then it runs all the same, without them."""
    holder = None
    if port_taken:
        holder = socket.socket()
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind(("0.0.0.0", 53317))
        holder.listen(1)
    base = tempfile.mkdtemp(prefix="fresh-", dir=WORK)
    home = os.path.join(base, "home")
    downloads = os.path.join(base, "Downloads")
    os.makedirs(downloads)
    env = dict(os.environ, FERRY_HOME=home, HOME=base, XDG_RUNTIME_DIR=os.path.join(base, "run"))
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    os.makedirs(os.path.join(base, "run"))
    out = subprocess.run([FERRY, "ui", "--print"], env=env, capture_output=True, text=True,
                         timeout=60)
    links = [line.strip() for line in out.stdout.splitlines() if "/login?token=" in line]
    check(out.returncode == 0 and links, "ferry ui with no daemon starts one and prints a link (%s)"
          % (out.stderr.strip()[:160]))
    status = subprocess.run([FERRY, "status", "--json"], env=env, capture_output=True, text=True,
                            timeout=30)
    pid = json.loads(status.stdout)["pid"] if status.returncode == 0 else None
    if pid is None:
        return
    try:
        port = json.loads(status.stdout)["ports"]["ui"]
        path = links[0].split(str(port), 1)[1] if links else "/"
        answer = request(port, path)
        check(answer and answer[0] == 303, "its link signs a browser in (%s)" % (answer and answer[0]))
        check(json.loads(status.stdout)["receiving"]["dir"] == downloads,
              "with no dir in the config it receives into ~/Downloads")
        check(os.path.exists(os.path.join(home, "daemon.log")), "its output goes to daemon.log")
        protocols = json.loads(status.stdout)["protocols"]
        if port_taken:
            with open(os.path.join(home, "daemon.log")) as f:
                said = "not answering LocalSend apps" in f.read()
            check(protocols == ["ferry"] and said,
                  "LocalSend's port taken: it runs without LocalSend, and says so in its log (%s)" % protocols)
        else:
            check("localsend" in protocols and json.loads(status.stdout)["ports"].get("localsend") == 53317,
                  "it answers LocalSend apps too, with no config saying otherwise (%s)" % protocols)
    finally:
        if holder is not None:
            holder.close()
        # The daemon it started, ended by its pid (it runs in a session of its own).
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not os.path.exists("/proc/%d" % pid) or
                 open("/proc/%d/stat" % pid).read().split()[2] == "Z", 20)


def main():
    daemon = Daemon("ui-daemon")
    try:
        test_guards(daemon)
        test_starts_daemon()
        test_starts_daemon(port_taken=True)
        test_page(daemon, Chromium)
        test_page(daemon, Firefox)
    finally:
        for proc in reversed(started):
            end(proc)
    print("ui: %d failures" % len(failures))
    for failure in failures:
        print("  " + failure)
    shutil.rmtree(WORK, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
