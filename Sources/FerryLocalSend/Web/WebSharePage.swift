import Foundation

/// The page `ferry send --web` serves: it asks the sender for the files (`prepare-download`:
/// the person at the terminal says yes or no), then lists them with a download link each and
/// their sizes. Style shared with ``WebPage``; no inline code.
enum WebSharePage {
  /// The page, its script and style under `base` (the link's path).
  static func html(base: String) -> String {
    WebPage.document(title: "Files shared with Ferry", base: base, main: main)
  }

  private static let main = """
    <h1 id="title">Files shared with you</h1>
    <p class="note">Plain HTTP on your local network: others on it could see these files.</p>
    <p id="summary"></p>
    <ul id="list" aria-label="Files"></ul>
    <p id="status" role="status" aria-live="polite"></p>
    """

  /// Asks, then lists the files as links (`download` carries the session, not the token: a
  /// link cannot send a header). Text goes in as text, never markup.
  static let script = #"""
    "use strict";
    const token = location.pathname.split("/")[2] || "";
    const $ = (id) => document.getElementById(id);
    function size(n) {
      const units = ["bytes", "KB", "MB", "GB", "TB"];
      let i = 0;
      while (n >= 1000 && i < units.length - 1) { n /= 1000; i++; }
      return (i === 0 ? n : n.toFixed(n < 10 ? 1 : 0)) + " " + units[i];
    }
    function say(text, kind) { const s = $("status"); s.textContent = text; s.className = kind || ""; }
    const refusals = {
      403: "The sender said no.",
      404: "This link has expired or is wrong.",
      410: "This link has expired. Ask for a new one.",
      429: "Too many attempts. Wait, then try again.",
    };
    say("Waiting for the sender to let you in…");
    const x = new XMLHttpRequest();
    x.open("POST", "/api/localsend/v2/prepare-download");
    x.setRequestHeader("x-ferry-token", token);
    x.onerror = () => say("The sender cannot be reached.", "error");
    x.onload = () => {
      if (x.status !== 200) { say(refusals[x.status] || "Refused (HTTP " + x.status + ").", "error"); return; }
      let answer;
      try { answer = JSON.parse(x.responseText); } catch (e) { say("The sender answered nonsense.", "error"); return; }
      $("title").textContent = "Files from " + ((answer.info && answer.info.alias) || "Ferry");
      const ids = Object.keys(answer.files).sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
      let total = 0;
      for (const id of ids) {
        const file = answer.files[id];
        total += file.size;
        const li = document.createElement("li");
        const link = document.createElement("a");
        link.className = "path";
        link.textContent = file.fileName;
        link.href = "/api/localsend/v2/download?sessionId=" + encodeURIComponent(answer.sessionId)
          + "&fileId=" + encodeURIComponent(id);
        link.setAttribute("download", file.fileName.split("/").pop());
        const bytes = document.createElement("span");
        bytes.className = "size";
        bytes.textContent = size(file.size);
        li.append(link, bytes);
        $("list").append(li);
      }
      $("summary").textContent = ids.length + (ids.length === 1 ? " file, " : " files, ") + size(total)
        + ". Each link downloads one file.";
      say("");
    };
    x.send("{}");
    """#
}
