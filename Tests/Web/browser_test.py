#!/usr/bin/env python3
"""ferry receive --web in a real browser: headless Chromium (Debian's chromium, chromium-driver
and python3-selenium) uploads files and a folder through the page; the bytes, the prompt, a
decline, expiry and a wrong token are checked, and screenshots are taken at phone and desktop
size. Run by Tests/Web/run.sh inside a network namespace that has only loopback: the browser can
reach nothing but the receiver on 127.0.0.1.

usage: browser_test.py FERRY_BINARY SCREENSHOT_DIR
"""
import hashlib
import json
import os
import pty
import select
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

FERRY, SHOTS = sys.argv[1], sys.argv[2]
os.makedirs(SHOTS, exist_ok=True)
WORK = tempfile.mkdtemp(prefix="ferry-web-")
ENV = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS="unix:path=/nonexistent/ferry-test-bus")
failures = []


def check(ok, what):
    """One expectation, reported as scripts/test counts Swift Testing's (one line each)."""
    what = "web: " + what.replace('"', "'")
    print(('\u2714 Test "%s" passed after 0.000 seconds.' if ok
           else '\u2718 Test "%s" failed after 0.000 seconds.') % what, flush=True)
    if not ok:
        failures.append(what)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def tree(root):
    out = {}
    for base, _, files in os.walk(root):
        for name in files:
            full = os.path.join(base, name)
            out[os.path.relpath(full, root)] = sha(full)
    return out


def launch(args, env, terminal, what):
    """Starts ARGS (JSON events on stdout), its terminal a pty when `terminal`; waits up to
    20 s for its web-link event. Returns (process, first url, master fd or None)."""
    master = None
    if terminal:
        master, slave = pty.openpty()
        proc = subprocess.Popen(args, env=env, stdin=slave, stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
    else:
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while time.time() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        event = json.loads(line)
        if event["event"] == "web-link":
            return proc, event["urls"][0], master
    proc.kill()
    raise SystemExit(what + " gave no link")


def receiver(name, extra, terminal=False):
    """Starts ferry receive --web --json; returns (process, url, master fd or None, dest)."""
    dest = os.path.join(WORK, name)
    os.makedirs(dest)
    env = dict(ENV, FERRY_HOME=os.path.join(WORK, "home-" + name))
    args = [FERRY, "receive", "--web", "--json", "--port", "0", "--dir", dest] + extra
    proc, url, master = launch(args, env, terminal, "ferry receive --web")
    return proc, url, master, dest


def browser(width, height):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 f"--window-size={width},{height}", "--no-first-run", "--disable-extensions",
                 "--disable-background-networking", "--disable-component-update",
                 "--user-data-dir=" + tempfile.mkdtemp(prefix="chromium-", dir=WORK)]:
        options.add_argument(flag)
    if width < 500:
        options.add_experimental_option("mobileEmulation", {
            "deviceMetrics": {"width": width, "height": height, "pixelRatio": 2}})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def status_text(driver):
    return driver.find_element(By.ID, "status").text


def wait_status(driver, prefix, timeout=60):
    try:
        WebDriverWait(driver, timeout).until(lambda d: status_text(d).startswith(prefix))
        return True
    except Exception:  # noqa: BLE001
        return False


def make_sources():
    src = os.path.join(WORK, "src")
    os.makedirs(os.path.join(src, "album", "2026", "raw"))
    files = {"notes.txt": 1234, "photo.jpg": 3 << 20, "album/cover.png": 40000,
             "album/2026/a.bin": 777, "album/2026/raw/b.bin": 5 << 20, "album/empty.txt": 0}
    for rel, size in files.items():
        with open(os.path.join(src, rel), "wb") as f:
            f.write(os.urandom(size))
    with open(os.path.join(src, "big.bin"), "wb") as f:
        f.write(os.urandom(40 << 20))
    # A known time: the page sends each file's time, and the receiver keeps it.
    os.utime(os.path.join(src, "photo.jpg"), ns=(1_600_000_000_123_000_000,) * 2)
    return src


def main():
    src = make_sources()

    # 1. A phone-sized page: two files and a folder, accepted by --yes.
    proc, url, _, dest = receiver("phone", ["--yes"])
    driver = browser(360, 740)
    try:
        driver.get(url)
        WebDriverWait(driver, 10).until(
            lambda d: d.find_element(By.ID, "name").text not in ("", "this computer"))
        check("Send files to" in driver.find_element(By.TAG_NAME, "h1").text, "phone: heading")
        resources = driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)")
        check(all(r.startswith(url.split("/r/")[0]) for r in resources),
              "phone: no resource from elsewhere " + repr(resources))
        width = driver.execute_script("return document.documentElement.scrollWidth")
        check(width <= 360, f"phone: nothing wider than the screen ({width} px)")
        driver.save_screenshot(os.path.join(SHOTS, "phone-1-empty.png"))
        files = driver.find_element(By.ID, "files")
        files.send_keys(os.path.join(src, "notes.txt") + "\n" + os.path.join(src, "photo.jpg"))
        driver.find_element(By.ID, "folder").send_keys(os.path.join(src, "album"))
        # A file dropped on the drop zone (a drop event carrying a File, as a drag would).
        driver.execute_script("""
            const dt = new DataTransfer();
            dt.items.add(new File(["dropped by a drag"], "dropped.txt", {type: "text/plain"}));
            const zone = document.getElementById("drop");
            zone.dispatchEvent(new DragEvent("dragover", {dataTransfer: dt, bubbles: true}));
            zone.dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true}));
        """)
        WebDriverWait(driver, 10).until(
            lambda d: len(d.find_elements(By.CSS_SELECTOR, "#list li")) >= 7)
        driver.save_screenshot(os.path.join(SHOTS, "phone-2-chosen.png"))
        driver.find_element(By.ID, "send").click()
        check(wait_status(driver, "Done"), "phone: the page says Done: " + status_text(driver))
        driver.save_screenshot(os.path.join(SHOTS, "phone-3-done.png"))
        got = tree(dest)
        want = {k: v for k, v in tree(src).items() if k != "big.bin"}
        want["dropped.txt"] = hashlib.sha256(b"dropped by a drag").hexdigest()
        check(got == want, f"phone: every byte arrived, the dropped file too ({len(got)} files)")
        kept = os.stat(os.path.join(dest, "photo.jpg")).st_mtime_ns
        check(kept == 1_600_000_000_123_000_000,
              f"phone: a file keeps its modification time ({kept})")
    finally:
        driver.quit()
        stop(proc)

    # 2. A desktop-sized page: one 40 MB file, accepted at the terminal (the prompt says who).
    proc, url, master, dest = receiver("desktop", ["--once"], terminal=True)
    driver = browser(1280, 800)
    try:
        driver.get(url)
        driver.save_screenshot(os.path.join(SHOTS, "desktop-1-empty.png"))
        driver.find_element(By.ID, "files").send_keys(os.path.join(src, "big.bin"))
        driver.find_element(By.ID, "send").click()
        prompt = read_until(master, b"[y/N]", 30)
        check(b"A browser at 127.0.0.1 wants to send (web page)" in prompt,
              "desktop: the prompt names a browser and its address")
        check(b"HeadlessChrome" in prompt or b"Chrome" in prompt,
              "desktop: the prompt shows the browser's User-Agent")
        check(b"plain HTTP" in prompt, "desktop: the prompt states plain HTTP")
        driver.save_screenshot(os.path.join(SHOTS, "desktop-2-waiting.png"))
        os.write(master, b"y\n")
        # While it goes: the percentage, the rate and the time left.
        try:
            WebDriverWait(driver, 60).until(lambda d: "%" in d.find_element(By.ID, "rate").text)
            rate = driver.find_element(By.ID, "rate").text
        except Exception:  # noqa: BLE001
            rate = driver.find_element(By.ID, "rate").text
        check("%" in rate, f"desktop: the page shows how far it is ({rate!r})")
        check(wait_status(driver, "Done", 120), "desktop: Done: " + status_text(driver))
        driver.save_screenshot(os.path.join(SHOTS, "desktop-3-done.png"))
        check(tree(dest) == {"big.bin": sha(os.path.join(src, "big.bin"))},
              "desktop: the 40 MB file arrived")
        try:
            code = proc.wait(15)
        except subprocess.TimeoutExpired:
            code = None
        check(code == 0, f"desktop: --once ends after the browser's files (exit {code})")
    finally:
        driver.quit()
        stop(proc, master)
        if master is not None:
            os.close(master)

    # 3. Declined at the terminal: the page says so; nothing is written.
    proc, url, master, dest = receiver("declined", [], terminal=True)
    driver = browser(360, 740)
    try:
        driver.get(url)
        driver.find_element(By.ID, "files").send_keys(os.path.join(src, "notes.txt"))
        driver.find_element(By.ID, "send").click()
        read_until(master, b"[y/N]", 30)
        os.write(master, b"n\n")
        check(wait_status(driver, "Declined"), "declined: the page says so: " + status_text(driver))
        driver.save_screenshot(os.path.join(SHOTS, "phone-4-declined.png"))
        check(os.listdir(dest) == [], "declined: nothing written")
        # Try again, without picking the file again: asked afresh, and this time it is sent.
        again = driver.find_element(By.ID, "send")
        check(again.text == "Try again" and again.is_enabled(),
              f"declined: the page offers to try again ({again.text!r})")
        again.click()
        read_until(master, b"[y/N]", 30)
        os.write(master, b"y\n")
        check(wait_status(driver, "Done", 60), "declined, then again: Done: " + status_text(driver))
        check(tree(dest) == {"notes.txt": sha(os.path.join(src, "notes.txt"))},
              "declined, then again: the file arrived")
    finally:
        driver.quit()
        stop(proc, master)
        if master is not None:
            os.close(master)

    # 4. A wrong token, and an expired link: the plain page, no form.
    proc, url, _, dest = receiver("expiring", ["--yes", "--web-expires", "0.1"])
    driver = browser(360, 740)
    try:
        base, token = url.split("/r/")
        wrong = base + "/r/" + ("0" if token[0] != "0" else "1") + token[1:]
        driver.get(wrong)
        check("expired or is wrong" in driver.find_element(By.TAG_NAME, "h1").text,
              "wrong token: the plain page")
        check(not driver.find_elements(By.ID, "files"), "wrong token: no form")
        driver.save_screenshot(os.path.join(SHOTS, "phone-5-wrong-link.png"))
        # The link's end is the receiver's end: it stops (exit 0) once its 6 s are over, and
        # nothing answers at the link after (no sender of any kind is taken any more).
        started = time.time()
        try:
            code = proc.wait(6 + 20)
        except subprocess.TimeoutExpired:
            code = None
        check(code == 0, f"expired: the receiver ends with its link (exit {code})")
        check(time.time() - started < 6 + 20, "expired: it ends soon after the link")
        try:
            urllib.request.urlopen(urllib.request.Request(
                base + "/api/localsend/v2/info", headers={"x-ferry-token": token}), timeout=5)
            check(False, "expired: nothing answers at the link")
        except urllib.error.HTTPError as e:
            check(False, f"expired: nothing answers at the link (HTTP {e.code})")
        except (urllib.error.URLError, OSError):
            pass
    finally:
        driver.quit()
        stop(proc)

    # 6. ferry send --web: asked at the terminal, then the browser downloads every file.
    check_share(src)

    # 5. The QR codes on a terminal decode (zbarimg) to the link, with colours and without.
    for colours in (True, False):
        check_qr(colours)

    shutil.rmtree(WORK, ignore_errors=True)
    print(f"{len(failures)} failed" if failures else "all passed", flush=True)
    sys.exit(1 if failures else 0)


def sender(extra, paths, terminal):
    """Starts ferry send --web --json PATHS; returns (process, url, master fd or None)."""
    env = dict(ENV, FERRY_HOME=os.path.join(WORK, "home-share"))
    args = [FERRY, "send", "--web", "--json"] + extra + paths
    return launch(args, env, terminal, "ferry send --web")


def check_share(src):
    downloads = tempfile.mkdtemp(prefix="downloads-", dir=WORK)
    # Two files of one name in different folders: each is saved under its own path.
    with open(os.path.join(src, "album", "2026", "cover.png"), "wb") as f:
        f.write(os.urandom(5000))
    paths = [os.path.join(src, "notes.txt"), os.path.join(src, "album")]
    offered = {os.path.relpath(os.path.join(base, n), src): sha(os.path.join(base, n))
               for base, _, names in os.walk(src) for n in names
               if os.path.join(base, n).startswith(tuple(paths))}
    proc, url, master = sender(["--once"], paths, terminal=True)
    driver = browser(1280, 800)
    try:
        driver.execute_cdp_cmd(
            "Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
        driver.get(url)
        prompt = read_until(master, b"[y/N]", 30)
        check(b"A browser at 127.0.0.1 wants to download the files (web page)" in prompt,
              "share: the sender is asked about the browser")
        driver.save_screenshot(os.path.join(SHOTS, "desktop-4-share-waiting.png"))
        os.write(master, b"y\n")
        WebDriverWait(driver, 30).until(
            lambda d: len(d.find_elements(By.CSS_SELECTOR, "#list a")) == len(offered))
        check("Files from" in driver.find_element(By.ID, "title").text, "share: the list")
        shown = sorted(a.text for a in driver.find_elements(By.CSS_SELECTOR, "#list a"))
        check(shown == sorted(offered), f"share: every path listed with its folders ({shown})")
        driver.save_screenshot(os.path.join(SHOTS, "desktop-5-share-list.png"))
        links = driver.find_elements(By.CSS_SELECTOR, "#list a")
        # One file, then the mark: this browser has it.
        links[0].click()
        check(WebDriverWait(driver, 30).until(
            lambda d: "downloaded" in d.find_elements(By.CSS_SELECTOR, "#list li")[0].text),
            "share: a downloaded file is marked")
        for link in links[1:]:
            link.click()
            time.sleep(0.3)
        deadline = time.time() + 30
        want = {" - ".join(path.split("/")): digest for path, digest in offered.items()}
        got = {}
        while time.time() < deadline:
            got = {n: sha(os.path.join(downloads, n)) for n in os.listdir(downloads)
                   if not n.endswith(".crdownload")}
            if got == want:
                break
            time.sleep(0.2)
        check(got == want, f"share: every file downloaded byte for byte, under its own path "
              f"({sorted(got)} of {sorted(want)})")
        try:
            code = proc.wait(15)
        except subprocess.TimeoutExpired:
            code = None
        check(code == 0, f"share: --once ends once the browser has every file (exit {code})")
        check(wait_status(driver, "Every file is downloaded", 15)
              or wait_status(driver, "The sharing has ended", 15),
              "share: the page says it is over: " + status_text(driver))
    finally:
        driver.quit()
        if proc.poll() is None:
            stop(proc, master)
            if master is not None:
                os.close(master)
    # Everything as one zip: its names are the paths, its contents and CRCs right, and --once
    # is met by it.
    downloads = tempfile.mkdtemp(prefix="downloads-zip-", dir=WORK)
    proc, url, master = sender(["--once", "--yes"], paths, terminal=True)
    driver = browser(360, 740)
    try:
        driver.execute_cdp_cmd(
            "Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
        driver.get(url)
        button = WebDriverWait(driver, 30).until(
            lambda d: d.find_element(By.ID, "all") if d.find_element(By.ID, "all").is_displayed()
            else False)
        driver.save_screenshot(os.path.join(SHOTS, "phone-7-share-all.png"))
        button.click()
        deadline = time.time() + 30
        archive = None
        while time.time() < deadline:
            names = [n for n in os.listdir(downloads) if n.endswith(".zip")]
            if names:
                archive = os.path.join(downloads, names[0])
                break
            time.sleep(0.2)
        check(archive is not None, f"share: the zip arrived ({os.listdir(downloads)})")
        if archive:
            import zipfile
            with zipfile.ZipFile(archive) as z:
                check(z.testzip() is None, "share: every entry's CRC is right")
                inside = {i.filename: hashlib.sha256(z.read(i)).hexdigest() for i in z.infolist()}
            check(inside == offered, f"share: the zip holds every file under its path "
                  f"({sorted(inside)})")
        try:
            code = proc.wait(15)
        except subprocess.TimeoutExpired:
            code = None
        check(code == 0, f"share: the zip meets --once (exit {code})")
    finally:
        driver.quit()
        if proc.poll() is None:
            stop(proc, master)
            if master is not None:
                os.close(master)
    # Declined: the page says so.
    proc, url, master = sender([], [os.path.join(src, "notes.txt")], terminal=True)
    driver = browser(360, 740)
    try:
        driver.get(url)
        read_until(master, b"[y/N]", 30)
        os.write(master, b"n\n")
        check(wait_status(driver, "The sender said no"), "share declined: " + status_text(driver))
        driver.save_screenshot(os.path.join(SHOTS, "phone-6-share-declined.png"))
    finally:
        driver.quit()
        stop(proc, master)
        if master is not None:
            os.close(master)


def check_qr(colours):
    """Starts ferry receive --web on a terminal; decodes the QR code it draws."""
    dest = tempfile.mkdtemp(prefix="qr-", dir=WORK)
    env = dict(ENV, FERRY_HOME=os.path.join(WORK, "home-qr"), TERM="xterm")
    env.pop("NO_COLOR", None)
    if not colours:
        env["NO_COLOR"] = "1"
    master, slave = pty.openpty()
    proc = subprocess.Popen([FERRY, "receive", "--web", "--yes", "--port", "0", "--dir", dest],
                            env=env, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    try:
        text = read_until(master, b"Press Ctrl-C", 20).decode("utf-8", "replace")
    finally:
        stop(proc, master)
        os.close(master)
    lines = text.replace("\r", "").split("\n")
    url = next((l.strip() for l in lines if l.strip().startswith("http://")), None)
    rows = []
    for line in lines[[i for i, l in enumerate(lines) if l.strip() == url][0] + 1:] if url else []:
        plain = line.replace("\x1b[30;47m", "").replace("\x1b[0m", "")
        if not plain or any(c not in "\u2588\u2580\u2584 " for c in plain):
            break
        top, bottom = [], []
        for c in plain:
            drawn_top, drawn_bottom = c in "\u2588\u2580", c in "\u2588\u2584"
            # With colours the blocks are the dark modules; without, the light ones.
            top.append(drawn_top if colours else not drawn_top)
            bottom.append(drawn_bottom if colours else not drawn_bottom)
        rows += [top, bottom]
    what = "QR code (%s) decodes to the link" % ("colours" if colours else "NO_COLOR")
    if not url or not rows:
        check(False, what + ": none drawn")
        return
    scale, margin = 6, 4
    width = len(rows[0]) + 2 * margin
    pbm = os.path.join(WORK, "qr.pbm")
    with open(pbm, "w") as f:
        f.write("P1\n%d %d\n" % (width * scale, (len(rows) + 2 * margin) * scale))
        blank = ["0"] * width
        for row in [blank] * margin + [["0"] * margin + ["1" if d else "0" for d in r]
                                       + ["0"] * margin for r in rows] + [blank] * margin:
            line = " ".join(v for v in row for _ in range(scale))
            for _ in range(scale):
                f.write(line + "\n")
    decoded = subprocess.run(["zbarimg", "--raw", "-q", pbm], capture_output=True, text=True)
    check(decoded.stdout.strip() == url, what + " (%r)" % decoded.stdout.strip())


def stop(proc, terminal=None):
    """Ends `proc` as Ctrl-C would (SIGTERM), reading its terminal meanwhile (a terminal nobody
    reads holds a writer up); one still running after 30 s is killed, and that is a failure
    (never a process left behind)."""
    proc.terminate()
    deadline = time.time() + 30
    while proc.poll() is None and time.time() < deadline:
        if terminal is None:
            time.sleep(0.1)
            continue
        ready, _, _ = select.select([terminal], [], [], 0.1)
        if ready:
            try:
                os.read(terminal, 65536)
            except OSError:
                terminal = None
    if proc.poll() is None:
        proc.kill()
        proc.wait()
        check(False, "%s ends within 30 s of SIGTERM" % " ".join(proc.args[:3]))


def read_until(fd, needle, timeout):
    """What the terminal showed until `needle` (or the timeout)."""
    seen = b""
    deadline = time.time() + timeout
    while time.time() < deadline and needle not in seen:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    return seen


if __name__ == "__main__":
    main()
