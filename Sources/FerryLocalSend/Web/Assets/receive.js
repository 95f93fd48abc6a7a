"use strict";
const token = location.pathname.split("/")[2] || "";
const api = "/api/localsend/v2/";
const $ = (id) => document.getElementById(id);
let chosen = [];
let busy = false;
// The uploads under way (to cancel them), the session they belong to, and whether the
// person cancelled.
let inFlight = [];
let current = null;
let cancelled = false;

function size(n) {
  const units = ["bytes", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) { n /= 1000; i++; }
  return (i === 0 ? n : n.toFixed(n < 10 ? 1 : 0)) + " " + units[i];
}

function say(text, kind) {
  const s = $("status");
  s.textContent = text;
  s.className = kind || "";
}

function render() {
  const list = $("list");
  list.replaceChildren();
  let total = 0;
  for (const item of chosen) {
    const li = document.createElement("li");
    const path = document.createElement("span");
    path.className = "path";
    path.textContent = item.path;
    const bytes = document.createElement("span");
    bytes.className = "size";
    bytes.textContent = size(item.file.size);
    const state = document.createElement("span");
    state.className = "state";
    const bar = document.createElement("progress");
    bar.max = Math.max(item.file.size, 1);
    bar.value = 0;
    bar.setAttribute("aria-label", "Progress of " + item.path);
    bar.hidden = true;
    li.append(path, bytes, state, bar);
    item.li = li; item.bar = bar; item.state = state;
    if (item.sent) { li.className = "done"; state.textContent = "sent"; }
    list.append(li);
    total += item.file.size;
  }
  $("summary").textContent = chosen.length
    ? chosen.length + (chosen.length === 1 ? " file, " : " files, ") + size(total) : "";
  $("send").disabled = busy || chosen.length === 0;
  $("clear").disabled = busy || chosen.length === 0;
}

function add(file, path) {
  path = (path || file.name).replace(/^\/+/, "");
  if (!chosen.some((c) => c.path === path)) chosen.push({ file, path });
}

function readEntry(entry, prefix) {
  return new Promise((resolve) => {
    if (entry.isFile) {
      entry.file((f) => { add(f, prefix + f.name); resolve(); }, () => resolve());
    } else if (entry.isDirectory) {
      const reader = entry.createReader();
      const all = [];
      const next = () => reader.readEntries(async (batch) => {
        if (batch.length === 0) {
          for (const e of all) await readEntry(e, prefix + entry.name + "/");
          resolve();
        } else { all.push(...batch); next(); }
      }, () => resolve());
      next();
    } else { resolve(); }
  });
}

$("files").addEventListener("change", (e) => {
  if (busy) { e.target.value = ""; return; }
  for (const f of e.target.files) add(f, f.name);
  e.target.value = ""; say(""); render();
});
$("folder").addEventListener("change", (e) => {
  if (busy) { e.target.value = ""; return; }
  for (const f of e.target.files) add(f, f.webkitRelativePath || f.name);
  e.target.value = ""; say(""); render();
});
const drop = $("drop");
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", async (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  if (busy) return;
  const entries = [...e.dataTransfer.items].map((i) => i.webkitGetAsEntry && i.webkitGetAsEntry());
  if (entries.every((x) => x)) {
    for (const entry of entries) await readEntry(entry, "");
  } else {
    for (const f of e.dataTransfer.files) add(f, f.name);
  }
  say(""); render();
});
$("clear").addEventListener("click", () => {
  chosen = []; say(""); $("total").hidden = true; $("rate").textContent = "";
  $("send").textContent = "Send"; render();
});
$("cancel").addEventListener("click", () => {
  cancelled = true;
  for (const x of inFlight) x.abort();
  if (current) request("POST", "cancel?sessionId=" + encodeURIComponent(current), null);
});

// "42 % · 3.2 MB/s · about 1 min left", from the bytes of the last few seconds.
function pace(samples, done, total) {
  const now = performance.now();
  samples.push([now, done]);
  while (samples.length > 2 && now - samples[0][0] > 5000) samples.shift();
  const [t0, b0] = samples[0];
  const rate = now > t0 ? (done - b0) * 1000 / (now - t0) : 0;
  let text = Math.floor(done * 100 / Math.max(total, 1)) + " %";
  if (rate > 0) {
    text += " · " + size(rate) + "/s";
    const left = (total - done) / rate;
    text += " · " + (left < 60 ? "less than a minute left"
      : left < 3600 ? "about " + Math.ceil(left / 60) + " min left"
      : "about " + (left / 3600).toFixed(1) + " h left");
  }
  $("rate").textContent = text;
}

const refusals = {
  401: "The receiver wants a PIN, which a web page cannot give.",
  403: "Declined by the receiver.",
  404: "This link has expired or is wrong.",
  409: "The receiver is busy with another transfer. Try again in a moment.",
  410: "This link has expired. Ask for a new one.",
  413: "Too large: the receiver refuses this much.",
  429: "Too many attempts. Wait, then try again.",
  507: "Not enough space on the receiving side.",
};

function request(method, path, body, onProgress) {
  return new Promise((resolve) => {
    const x = new XMLHttpRequest();
    x.open(method, api + path);
    x.setRequestHeader("x-ferry-token", token);
    if (onProgress) x.upload.onprogress = (e) => onProgress(e.loaded);
    const done = (answer) => { inFlight = inFlight.filter((y) => y !== x); resolve(answer); };
    x.onload = () => done({ status: x.status, text: x.responseText });
    x.onerror = () => done({ status: 0, text: "" });
    x.onabort = () => done({ status: -1, text: "" });
    inFlight.push(x);
    x.send(body);
  });
}

// The file's own time (milliseconds since 1970), as RFC 3339; none if it has none.
function stamp(ms) {
  if (typeof ms !== "number" || !isFinite(ms)) return null;
  try { return new Date(ms).toISOString(); } catch (e) { return null; }
}

async function send() {
  busy = true; cancelled = false; render();
  $("send").disabled = true;
  $("cancel").hidden = false;
  // Again after a refusal or a failure: what was sent stays sent.
  const pending = chosen.filter((c) => !c.sent);
  const files = {};
  pending.forEach((c, i) => {
    files["f" + i] = { id: "f" + i, fileName: c.path, size: c.file.size,
      fileType: c.file.type || "application/octet-stream",
      metadata: { modified: stamp(c.file.lastModified) } };
  });
  const claim = [...crypto.getRandomValues(new Uint8Array(32))]
    .map((b) => b.toString(16).padStart(2, "0")).join("");
  const info = { alias: "Browser", version: "2.2", deviceModel: null, deviceType: "web",
    fingerprint: claim, port: null, protocol: "http", download: false };
  say("Waiting for the receiver to accept…");
  const answer = await request("POST", "prepare-upload", JSON.stringify({ info, files }));
  if (cancelled) { finish("Cancelled.", "error", true); return; }
  if (answer.status === 204) {
    for (const c of pending) { c.sent = true; c.state.textContent = "already there"; c.li.className = "done"; }
    finish("Nothing to send: the receiver already has these files.", "ok"); return;
  }
  if (answer.status !== 200) {
    finish(refusals[answer.status] || (answer.status === 0
      ? "The receiver cannot be reached." : "Refused (HTTP " + answer.status + ")."), "error", true);
    return;
  }
  let session;
  try { session = JSON.parse(answer.text); } catch (e) { finish("The receiver answered nonsense.", "error", true); return; }
  current = session.sessionId;
  const total = pending.reduce((n, c) => n + c.file.size, 0);
  const sent = new Array(pending.length).fill(0);
  const bar = $("total");
  const samples = [];
  bar.hidden = false; bar.max = Math.max(total, 1); bar.value = 0;
  const update = () => {
    const done = sent.reduce((a, b) => a + b, 0);
    bar.value = done;
    pace(samples, done, total);
  };
  say("Sending…");
  const queue = pending.map((c, i) => i);
  let failed = 0;
  async function worker() {
    while (queue.length && !cancelled) {
      const i = queue.shift();
      const item = pending[i];
      const id = "f" + i;
      const fileToken = session.files && session.files[id];
      if (!fileToken) {
        item.sent = true; item.state.textContent = "already there"; item.li.className = "done";
        continue;
      }
      item.bar.hidden = false;
      item.state.textContent = "sending";
      const q = "upload?sessionId=" + encodeURIComponent(session.sessionId)
        + "&fileId=" + encodeURIComponent(id) + "&token=" + encodeURIComponent(fileToken);
      const r = await request("POST", q, item.file, (n) => { item.bar.value = n; sent[i] = n; update(); });
      if (r.status === 200) {
        sent[i] = item.file.size; item.bar.value = item.bar.max; update();
        item.sent = true; item.state.textContent = "sent"; item.li.className = "done";
      } else {
        failed++;
        item.li.className = "failed";
        item.state.textContent = r.status === -1 ? "cancelled" : r.status === 0 ? "connection lost"
          : r.status === 422 ? "arrived damaged" : refusals[r.status] || ("failed (HTTP " + r.status + ")");
      }
    }
  }
  await Promise.all([worker(), worker(), worker()]);
  current = null;
  if (cancelled) { finish("Cancelled: what was sent stays sent.", "error", true); return; }
  const ok = pending.length - failed;
  finish(failed === 0 ? "Done: " + ok + (ok === 1 ? " file" : " files") + " sent."
    : "Sent " + ok + " of " + pending.length + " files; " + failed + " failed.", failed ? "error" : "ok",
    failed > 0);
}

// `again`: the same files may be sent again (what was sent is not), without picking them.
function finish(text, kind, again) {
  busy = false;
  say(text, kind);
  $("status").scrollIntoView({ block: "nearest" });
  $("cancel").hidden = true;
  $("send").textContent = again ? "Try again" : "Send";
  $("send").disabled = !again;
  $("clear").disabled = false;
}

$("send").addEventListener("click", send);
request("GET", "info", null).then((r) => {
  if (r.status !== 200) { say(refusals[r.status] || "This link does not work.", "error"); return; }
  try { $("name").textContent = JSON.parse(r.text).alias || "this computer"; } catch (e) { /* not JSON: the name stays "this computer" */ }
});
render();
