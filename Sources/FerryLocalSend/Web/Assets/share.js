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
const rows = {};
let session = "";
let watching = null;
let total = 0;
function mark(ids) {
  let left = 0;
  for (const id of Object.keys(rows)) {
    if (ids.includes(id)) {
      rows[id].li.classList.add("done");
      rows[id].state.textContent = "downloaded";
    } else {
      left++;
    }
  }
  if (left === 0) {
    say("Every file is downloaded.", "ok");
    clearInterval(watching);
    watching = null;
  }
}
function ask() {
  const q = new XMLHttpRequest();
  q.open("GET", "/api/ferry/v1/downloaded?sessionId=" + encodeURIComponent(session));
  q.onerror = () => {
    clearInterval(watching);
    watching = null;
    say("The sharing has ended: the sender's link is closed, and what was not downloaded "
      + "yet is no longer there.", "error");
  };
  q.onload = () => {
    if (q.status !== 200) { q.onerror(); return; }
    try { mark(JSON.parse(q.responseText).downloaded || []); } catch (e) { /* next time */ }
  };
  q.send();
}
function watch() { if (!watching) { watching = setInterval(ask, 3000); } }
say("Waiting for the sender to let you in…");
const x = new XMLHttpRequest();
x.open("POST", "/api/localsend/v2/prepare-download");
x.setRequestHeader("x-ferry-token", token);
x.onerror = () => say("The sender cannot be reached.", "error");
x.onload = () => {
  if (x.status !== 200) { say(refusals[x.status] || "Refused (HTTP " + x.status + ").", "error"); return; }
  let answer;
  try { answer = JSON.parse(x.responseText); } catch (e) { say("The sender answered nonsense.", "error"); return; }
  session = answer.sessionId;
  const from = (answer.info && answer.info.alias) || "Ferry";
  $("title").textContent = "Files from " + from;
  const ids = Object.keys(answer.files).sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)));
  for (const id of ids) {
    const file = answer.files[id];
    total += file.size;
    const li = document.createElement("li");
    const link = document.createElement("a");
    link.className = "path";
    link.textContent = file.fileName;
    link.href = "/api/localsend/v2/download?sessionId=" + encodeURIComponent(session)
      + "&fileId=" + encodeURIComponent(id);
    // A browser saves one name: the folders go in it.
    link.setAttribute("download", file.fileName.split("/").join(" - "));
    link.addEventListener("click", watch);
    const bytes = document.createElement("span");
    bytes.className = "size";
    bytes.textContent = size(file.size);
    const state = document.createElement("span");
    state.className = "state";
    li.append(link, bytes, state);
    $("list").append(li);
    rows[id] = { li: li, state: state };
  }
  const all = $("all");
  all.href = "/api/ferry/v1/download-all?sessionId=" + encodeURIComponent(session);
  all.setAttribute("download", "Files from " + from + ".zip");
  all.textContent = "Download all (one zip, " + size(total) + ")";
  all.addEventListener("click", watch);
  all.hidden = ids.length < 2;
  $("summary").textContent = ids.length + (ids.length === 1 ? " file, " : " files, ") + size(total)
    + (ids.length < 2 ? "." : ". Each link downloads one file; the button, all of them, with their folders.");
  say("");
};
x.send("{}");
