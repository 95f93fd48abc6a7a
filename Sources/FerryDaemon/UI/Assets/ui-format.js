/* The daemon page's words and numbers: pure functions, unit-tested by Tests/UI/format_test.js
   under node and used by ui.js in the browser. */
/* global module */
"use strict";

const FerryFormat = (function () {
  const units = ["bytes", "KB", "MB", "GB", "TB", "PB"];

  /** Bytes as people read them: 1 decimal from KB on (SI units, as the CLI prints). */
  function bytes(count) {
    if (typeof count !== "number" || !isFinite(count) || count < 0) return "?";
    if (count === 1) return "1 byte";
    let value = count;
    let unit = 0;
    while (value >= 1000 && unit < units.length - 1) {
      value /= 1000;
      unit += 1;
    }
    return unit === 0 ? value + " bytes" : value.toFixed(1) + " " + units[unit];
  }

  /** A duration in seconds, short: "45 s", "3 min", "2 h 5 min". */
  function duration(seconds) {
    if (typeof seconds !== "number" || !isFinite(seconds) || seconds < 0) return "?";
    const s = Math.round(seconds);
    if (s < 60) return s + " s";
    if (s < 3600) return Math.round(s / 60) + " min";
    const h = Math.floor(s / 3600);
    const m = Math.round((s - h * 3600) / 60);
    return m ? h + " h " + m + " min" : h + " h";
  }

  /** Progress words: "1.2 MB of 3.4 MB · 5.0 MB/s · 1 s left". */
  function progress(done, total, rate) {
    const parts = [total === null || total === undefined ? bytes(done) : bytes(done) + " of " + bytes(total)];
    if (typeof rate === "number" && rate > 0) {
      parts.push(bytes(rate) + "/s");
      if (typeof total === "number" && total >= done) parts.push(duration((total - done) / rate) + " left");
    }
    return parts.join(" · ");
  }

  /** A fingerprint in groups of four, as `ferry identity` prints it. */
  function fingerprint(hex) {
    if (typeof hex !== "string") return "";
    return (hex.match(/.{1,4}/g) || []).join(" ");
  }

  /** Text from the network made safe to show as one line: control characters (C0, DEL, C1),
      format characters (bidirectional controls, zero-width characters, tags: Unicode's Cf)
      and line separators become U+FFFD; at most `limit` code points. */
  function printable(text, limit) {
    if (typeof text !== "string") return "";
    const max = limit || 200;
    const cleaned = Array.from(text)
      .map(function (c) {
        const code = c.codePointAt(0);
        const control = code < 0x20 || (code >= 0x7f && code < 0xa0);
        const format = /\p{Cf}/u.test(c);
        const separator = code === 0x2028 || code === 0x2029;
        return control || format || separator ? "\ufffd" : c;
      });
    return cleaned.length > max ? cleaned.slice(0, max).join("") + "…" : cleaned.join("");
  }

  /** A send's state in words. */
  function sendState(state) {
    const words = {
      queued: "waiting for the device",
      delivering: "sending",
      delivered: "delivered",
      failed: "failed",
      cancelled: "cancelled",
      expired: "expired",
    };
    return words[state] || String(state);
  }

  /** A count of files and folders, and their size when known. */
  function contents(files, folders, size) {
    const parts = [];
    if (typeof files === "number") parts.push(files === 1 ? "1 file" : files + " files");
    if (typeof folders === "number" && folders > 0) parts.push(folders === 1 ? "1 folder" : folders + " folders");
    if (typeof size === "number") parts.push(bytes(size));
    return parts.join(", ");
  }

  return { bytes, duration, progress, fingerprint, printable, sendState, contents };
})();

if (typeof module !== "undefined") module.exports = FerryFormat;
