// Unit tests of the page's words and numbers (Sources/FerryDaemon/UI/Assets/ui-format.js),
// run under node by Tests/UI/run.sh; each check printed as scripts/test counts them.
"use strict";
const path = require("path");
const F = require(path.join(__dirname, "../../Sources/FerryDaemon/UI/Assets/ui-format.js"));
let failed = 0;

function check(ok, what) {
  console.log((ok ? '\u2714 Test "ui-format: %s" passed after 0.000 seconds.' : '\u2718 Test "ui-format: %s" failed after 0.000 seconds.'), what);
  if (!ok) failed += 1;
}

check(F.bytes(0) === "0 bytes" && F.bytes(1) === "1 byte" && F.bytes(999) === "999 bytes", "bytes under 1 KB");
check(F.bytes(1000) === "1.0 KB" && F.bytes(1234567) === "1.2 MB" && F.bytes(5e12) === "5.0 TB", "bytes in SI units");
check(F.bytes(-1) === "?" && F.bytes(NaN) === "?" && F.bytes("12") === "?" && F.bytes(Infinity) === "?", "bytes: nonsense is ?");
check(F.bytes(2 ** 62) === "4611.7 PB", "bytes: the largest send");
check(F.duration(0) === "0 s" && F.duration(59.4) === "59 s" && F.duration(90) === "2 min", "short durations");
check(F.duration(3600) === "1 h" && F.duration(7500) === "2 h 5 min" && F.duration(-3) === "?", "long durations");
check(F.progress(500, 1000, 100) === "500 bytes of 1.0 KB · 100 bytes/s · 5 s left", "progress with rate and time left");
check(F.progress(500, null, 0) === "500 bytes", "progress of a streamed file (no total, no rate)");
check(F.fingerprint("87CB4D07A2350185") === "87CB 4D07 A235 0185" && F.fingerprint(null) === "", "fingerprint in groups");
check(F.printable("a\u0007b\u001b[31mc\u007f\u0085") === "a\ufffdb\ufffd[31mc\ufffd\ufffd", "control characters are replaced");
check(F.printable("evil\u202egpj.exe") === "evil\ufffdgpj.exe" && F.printable("x\u2066y\u2069") === "x\ufffdy\ufffd", "bidirectional overrides are replaced");
check(F.printable("line\u2028two") === "line\ufffdtwo", "line separators are replaced");
check(F.printable("a\u200bb\u061cc\ufeffd\u{e0041}e\u2060f") === "a\ufffdb\ufffdc\ufffdd\ufffde\ufffdf", "zero-width, Arabic mark, BOM, tags and word joiner are replaced");
check(F.printable("😀".repeat(300)).length === 201 * 2 - 1 && F.printable("😀".repeat(300)).endsWith("…"), "long text is cut at code points, never inside one");
check(F.printable(42) === "" && F.printable(undefined) === "", "printable: not a string is empty");
check(F.sendState("queued") === "waiting for the device" && F.sendState("weird") === "weird", "send states in words");
check(F.contents(1, 0, 10) === "1 file, 10 bytes" && F.contents(3, 2) === "3 files, 2 folders" && F.contents() === "", "contents");
process.exit(failed ? 1 : 0);
