/* The daemon's page: what GET /api/v1/… answers, kept current by the event stream (/events,
   Server-Sent Events): nothing is polled. Everything from the network goes in as text. */
/* global FerryFormat, FerryUpload */
"use strict";

(function () {
  const F = FerryFormat;
  const transfers = new Map();
  const pending = new Set();
  let flushTimer = null;
  let offers = [];
  let arriving = [];
  let me = null;
  let sends = [];
  const names = new Map();
  let source = null;
  let signedOutShown = false;

  // The page's key: given once in the address's fragment by the login, kept in this origin's
  // own storage (another port's page cannot read it), sent with every API request.
  // A key in the address is kept only once the daemon takes it (another page on this machine
  // could open this one with a made-up key, to sign it out).
  const given = /^#key=([0-9a-f]{32})$/.exec(window.location.hash);
  window.history.replaceState(null, "", "/");
  let offered = given ? given[1] : null;

  function key() {
    return offered || window.localStorage.getItem("ferry-key") || "";
  }

  /** Checks the key the address gave: kept when the daemon takes it, forgotten otherwise. */
  async function settleKey() {
    if (!offered) return;
    const response = await fetch("/api/v1/status", { credentials: "same-origin", headers: { "x-ferry-key": offered } });
    if (response.ok) window.localStorage.setItem("ferry-key", offered);
    offered = null;
  }

  function $(id) {
    return document.getElementById(id);
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function badge(text, kind) {
    return el("span", "badge" + (kind ? " " + kind : ""), text);
  }

  /** A button doing `action`; what goes wrong is said in `status` (an element beside it, a
      live region), else in the header. */
  function button(text, kind, action, status) {
    const node = el("button", kind || "", text);
    node.type = "button";
    node.addEventListener("click", function () {
      node.disabled = true;
      Promise.resolve(action(node)).catch(function (error) {
        if (!status) return showError(error);
        status.className = "detail error";
        status.textContent = F.printable(error && error.message ? error.message : String(error), 300);
      }).finally(function () {
        node.disabled = false;
      });
    });
    return node;
  }

  /** The API, same origin, JSON; a refusal becomes an Error with the daemon's words. */
  async function api(path, options) {
    const init = Object.assign({ credentials: "same-origin", headers: {} }, options || {});
    init.headers["x-ferry-key"] = key();
    if (init.body !== undefined) init.headers["content-type"] = "application/json";
    return answer(await fetch("/api/v1" + path, init));
  }

  /** An API answer's JSON body (null for none); a refusal throws the daemon's words. */
  async function answer(response) {
    let body = null;
    try {
      body = await response.json();
    } catch (error) {
      body = null;
    }
    if (response.status === 401) signedOut();
    if (!response.ok) {
      const message = body && body.error && body.error.message;
      throw new Error(message || "the daemon answered " + response.status);
    }
    return body;
  }

  function showError(error) {
    setConnection("error", F.printable(String(error && error.message ? error.message : error)));
  }

  function setConnection(kind, text) {
    const node = $("connection");
    node.textContent = text;
    node.className = "badge " + (kind === "live" ? "good" : kind === "error" ? "bad" : "warn");
  }

  function signedOut() {
    if (signedOutShown) return;
    signedOutShown = true;
    if (source) source.close();
    setConnection("error", "Signed out: run ferry ui again");
  }

  /** Shows `items` in list `listId`: an item whose key and content did not change keeps its
      element (and what a person typed in it, and the focus); others are made again. */
  function fill(listId, emptyId, items, render, key, shown) {
    const list = $(listId);
    const old = new Map();
    Array.from(list.children).forEach(function (child) {
      old.set(child.dataset.key, child);
    });
    const nodes = items.map(function (item) {
      const id = key ? key(item) : JSON.stringify(item);
      const signature = JSON.stringify(shown ? shown(item) : item);
      const kept = old.get(id);
      if (kept && kept.dataset.signature === signature) return kept;
      const node = render(item);
      node.dataset.key = id;
      node.dataset.signature = signature;
      return node;
    });
    nodes.forEach(function (node, index) {
      if (list.children[index] !== node) list.insertBefore(node, list.children[index] || null);
    });
    while (list.children.length > nodes.length) list.removeChild(list.lastElementChild);
    $(emptyId).hidden = items.length > 0;
  }

  // MARK: What each list shows

  function renderStatus(status) {
    me = status.fingerprint;
    document.querySelectorAll("#accept input").forEach(function (radio) {
      radio.checked = radio.value === status.receiving.accept;
    });
    $("accept-status").textContent = status.receiving.accept === "yes" ? "Now: every sender comes in without asking (the config's accept = \"yes\")." : "";
    document.title = "Ferry — " + F.printable(status.name, 60);
    $("name").textContent = F.printable(status.name, 80);
    $("fingerprint").textContent = F.fingerprint(status.fingerprint).slice(0, 19) + " …";
    const accepts = { ask: "asks you about each sender", trusted: "takes trusted devices, asks you about the others", "trusted-only": "takes trusted devices only", yes: "takes everything" };
    const rows = [
      ["Name", F.printable(status.name)],
      ["Fingerprint", F.fingerprint(status.fingerprint)],
      ["Receives into", F.printable(status.receiving.dir, 400)],
      ["Accepts", accepts[status.receiving.accept] || status.receiving.accept],
      ["Protocols", status.protocols.join(", ")],
      ["Addresses", status.addresses.join(", ") || "none"],
      ["Visible to others", status.advertised ? "yes" : "no (avahi-daemon does not announce it)"],
      ["Version", status.version],
    ];
    const list = $("machine");
    list.replaceChildren();
    rows.forEach(function (row) {
      list.append(el("dt", "", row[0]), el("dd", row[0] === "Fingerprint" ? "fingerprint" : "", row[1]));
    });
  }

  // MARK: The file picker: folders of the user's home, listed by the daemon, sent from disk

  const picker = { peer: null, path: null, parent: null, home: null, chosen: new Set() };

  function openPicker(peer) {
    picker.peer = peer;
    picker.chosen.clear();
    $("picker-title").textContent = "Send to " + F.printable(peer.name, 60);
    $("picker-status").textContent = "";
    $("picker").showModal();
    browse(picker.path);
  }

  function browse(path) {
    const query = path ? "?path=" + encodeURIComponent(path) : "";
    return api("/files" + query).then(function (folder) {
      picker.path = folder.path;
      picker.parent = folder.parent || null;
      picker.home = folder.home;
      $("picker-path").textContent = F.printable(folder.path, 400) + (folder.truncated ? " (the first 5000)" : "");
      $("picker-up").disabled = !picker.parent;
      const list = $("picker-list");
      list.replaceChildren.apply(list, folder.entries.filter(function (entry) {
        return entry.kind !== "other";
      }).map(function (entry) {
        const full = (folder.path === "/" ? "" : folder.path) + "/" + entry.name;
        const item = el("li");
        const label = el("label");
        const box = el("input");
        box.type = "checkbox";
        box.checked = picker.chosen.has(full);
        box.addEventListener("change", function () {
          if (box.checked) picker.chosen.add(full);
          else picker.chosen.delete(full);
          updatePickerSend();
        });
        label.append(box, el("span", "", F.printable(entry.name, 200) + (entry.kind === "folder" ? "/" : "")));
        item.append(label);
        if (entry.kind === "folder") {
          const open = el("button", "link", "Open");
          open.type = "button";
          open.setAttribute("aria-label", "Open " + F.printable(entry.name, 60));
          open.addEventListener("click", function () { browse(full).catch(pickerError); });
          item.append(open);
        } else {
          item.append(el("span", "detail", F.bytes(entry.size)));
        }
        return item;
      }));
      updatePickerSend();
      // The list was made again: focus on where it is, not lost with the button pressed.
      $("picker-path").focus();
    }).catch(pickerError);
  }

  function pickerError(error) {
    $("picker-status").className = "detail error";
    $("picker-status").textContent = F.printable(error.message, 300);
  }

  function updatePickerSend() {
    const count = picker.chosen.size;
    $("picker-send").disabled = count === 0;
    $("picker-send").textContent = count ? "Send " + (count === 1 ? "1 item" : count + " items") : "Send";
  }

  function sendChosen() {
    const peer = picker.peer;
    const body = { to: peer.fingerprint || peer.name, paths: Array.from(picker.chosen) };
    if (peer.protocol === "localsend") body.protocol = "localsend";
    $("picker-send").disabled = true;
    return api("/sends", { method: "POST", body: JSON.stringify(body) }).then(function (send) {
      $("picker-status").className = "detail ok";
      $("picker-status").textContent = "Sending " + F.contents(send.fileCount, 0, send.total) + ": see the outbox.";
      picker.chosen.clear();
      refresh("sends");
    }, pickerError).finally(updatePickerSend);
  }

  document.querySelectorAll("#accept input").forEach(function (radio) {
    radio.addEventListener("change", function () {
      if (!radio.checked) return;
      api("/receiving/accept", { method: "PUT", body: JSON.stringify({ accept: radio.value }) })
        .then(function () {
          $("accept-status").className = "detail ok";
          $("accept-status").textContent = "Changed.";
        }, function (error) {
          $("accept-status").className = "detail error";
          $("accept-status").textContent = F.printable(error.message, 200);
        })
        .finally(function () {
          refresh("status");
        });
    });
  });

  $("open-folder").addEventListener("click", function () {
    api("/receiving/open", { method: "POST" }).then(function (opened) {
      $("open-status").className = "detail ok";
      $("open-status").textContent = "Opened " + F.printable(opened.dir, 300) + ".";
    }, function (error) {
      $("open-status").className = "detail error";
      $("open-status").textContent = F.printable(error.message, 300);
    });
  });

  $("picker-up").addEventListener("click", function () {
    if (picker.parent) browse(picker.parent);
  });
  $("picker-home").addEventListener("click", function () {
    browse(picker.home);
  });
  $("picker-send").addEventListener("click", sendChosen);

  function sendForm(peer, label) {
    const form = $("send-form").content.firstElementChild.cloneNode(true);
    form.querySelector(".choose").addEventListener("click", function () {
      openPicker(peer);
    });
    const input = form.querySelector("input");
    const submit = form.querySelector("button");
    submit.textContent = label;
    submit.setAttribute("aria-label", label + " to " + F.printable(peer.name, 60));
    form.querySelector(".choose").setAttribute("aria-label", "Choose files to send to " + F.printable(peer.name, 60));
    input.setAttribute("aria-label", "Path on this machine to send to " + F.printable(peer.name, 60));
    const result = el("p", "detail");
    result.setAttribute("role", "status");
    form.addEventListener("submit", function (submitted) {
      submitted.preventDefault();
      submit.disabled = true;
      const body = { to: peer.fingerprint || peer.name, paths: [input.value.trim()] };
      if (peer.protocol === "localsend") body.protocol = "localsend";
      api("/sends", { method: "POST", body: JSON.stringify(body) })
        .then(function (send) {
          result.className = "detail ok";
          result.textContent = "Sending " + F.contents(send.fileCount, 0, send.total) + ": see the outbox.";
          input.value = "";
          refresh("sends");
        })
        .catch(function (error) {
          result.className = "detail error";
          result.textContent = F.printable(error.message, 300);
        })
        .finally(function () {
          submit.disabled = false;
        });
    });
    const wrap = el("div");
    wrap.append(form, result);
    return wrap;
  }

  /** Files this browser holds, for a Ferry device nearby: dropped on its card, or chosen
      with the browser's own dialog (files, or a folder); sent as they are read, one upload to
      a device at a time. What each card last said is kept by device, so that a card drawn
      again (trusted, renamed, back in sight) still says it. */
  const uploading = new Map();

  function uploads(peer, card) {
    const device = peerKey(peer);
    const name = F.printable(peer.name, 60);
    const wrap = el("div");
    const files = el("input");
    files.type = "file";
    files.multiple = true;
    files.hidden = true;
    const folder = el("input");
    folder.type = "file";
    folder.hidden = true;
    folder.setAttribute("webkitdirectory", "");
    const hint = el("p", "detail", "Or drop files and folders here. Files sent this way need this page open until they are sent; Choose files… sends from your home folder and goes on after the page is closed.");
    hint.id = "drop-hint-" + (peer.fingerprint || "").slice(0, 16);
    const result = el("p", "detail");
    result.setAttribute("role", "status");
    const buttons = el("div", "buttons");
    const pickFiles = el("button", "secondary", "Send files…");
    pickFiles.type = "button";
    pickFiles.setAttribute("aria-label", "Send files from this browser to " + name);
    pickFiles.addEventListener("click", function () { files.click(); });
    const pickFolder = el("button", "secondary", "Send a folder…");
    pickFolder.type = "button";
    pickFolder.setAttribute("aria-label", "Send a folder from this browser to " + name);
    pickFolder.addEventListener("click", function () { folder.click(); });
    [pickFiles, pickFolder].forEach(function (node) { node.setAttribute("aria-describedby", hint.id); });
    buttons.append(pickFiles, pickFolder);

    function say(state) {
      uploading.set(device, Object.assign({}, uploading.get(device), state));
      show(device, document.querySelector("#peers > li[data-device='" + CSS.escape(device) + "']"));
    }
    result.dataset.upload = "status";
    pickFiles.dataset.upload = pickFolder.dataset.upload = "pick";
    card.dataset.device = device;
    show(device, card);
    function go(collect) {
      if ((uploading.get(device) || {}).busy) {
        say({ kind: "error", text: "Wait until the files going to " + name + " are sent, then send more." });
        return;
      }
      say({ busy: true, kind: "", text: "Reading what to send…" });
      active += 1;
      collect()
        .then(function (items) {
          const folders = items.filter(function (item) { return item.folder; }).length;
          const count = items.length - folders;
          return FerryUpload.send(peer.fingerprint, items, api, put, function () {
            say({ text: "Waiting for " + name + " to accept " + F.contents(count, folders, items.reduce(function (sum, item) { return sum + (item.file ? item.file.size : 0); }, 0)) + "… Keep this page open until this says it is sent." });
            refresh("sends");
          }).then(function () { return count; });
        })
        .then(function (count) {
          say({ kind: "ok", text: count > 0 ? "Sent to " + name + ": you can close this page. The outbox says when it has arrived." : "Sent " + name + " empty folders: see the outbox." });
        })
        .catch(function (error) {
          say({ kind: "error", text: F.printable(error && error.message ? error.message : String(error), 300) });
        })
        .finally(function () {
          active -= 1;
          say({ busy: false });
          files.value = "";
          folder.value = "";
          refresh("sends");
        });
    }
    files.addEventListener("change", function () {
      const items = FerryUpload.chosen(files.files);
      go(function () { return Promise.resolve(items); });
    });
    folder.addEventListener("change", function () {
      const items = FerryUpload.chosen(folder.files);
      go(function () {
        return items.length ? Promise.resolve(items) : Promise.reject(new Error("That folder is empty: nothing to send."));
      });
    });
    card.addEventListener("drop", function (dropped) {
      dropped.preventDefault();
      clearOutlines();
      go(FerryUpload.dropped(dropped.dataTransfer));
    });
    wrap.append(buttons, hint, files, folder, result);
    return wrap;
  }

  /** What the last upload to `device` said, on its card (if it has one now). */
  function show(device, card) {
    const now = uploading.get(device);
    if (!card || !now) return;
    const result = card.querySelector("[data-upload=status]");
    if (result) {
      result.className = "detail" + (now.kind ? " " + now.kind : "");
      result.textContent = now.text || "";
    }
    card.querySelectorAll("[data-upload=pick]").forEach(function (node) { node.disabled = !!now.busy; });
  }

  /** Uploads under way: leaving the page would cut them off (their sends are cancelled). */
  let active = 0;
  window.addEventListener("beforeunload", function (leaving) {
    if (active === 0) return;
    leaving.preventDefault();
    leaving.returnValue = "";
  });

  /** One file's bytes, as the browser reads them. */
  async function put(path, file) {
    let response;
    try {
      response = await fetch("/api/v1" + path, {
        method: "PUT", credentials: "same-origin", body: file,
        headers: { "x-ferry-key": key(), "content-type": "application/octet-stream" }
      });
    } catch (error) {
      throw new Error("Could not read " + F.printable(file.name, 120) + " from this computer (moved or deleted?), or Ferry stopped.");
    }
    await answer(response);
  }

  function clearOutlines() {
    document.querySelectorAll("#peers > li.over").forEach(function (node) { node.classList.remove("over"); });
  }

  // A Ferry device's card takes a drop (outlined while something is dragged over it); a
  // LocalSend device's does not, and the page elsewhere never opens a dropped file in place
  // of itself.
  document.addEventListener("dragover", function (over) {
    over.preventDefault();
    const found = over.target.closest ? over.target.closest("#peers > li") : null;
    const card = found && found.dataset.device ? found : null;
    const status = found && !card ? found.querySelector("form.send + p") : null;
    if (status && !status.dataset.refused) {
      // A LocalSend device: said while the drag is over its card (nothing is dropped).
      status.dataset.refused = "yes";
      status.className = "detail error";
      status.textContent = "This device uses LocalSend, which cannot take dropped files: use Choose files… instead.";
    }
    over.dataTransfer.dropEffect = card ? "copy" : "none";
    document.querySelectorAll("#peers > li.over").forEach(function (node) {
      if (node !== card) node.classList.remove("over");
    });
    if (card) card.classList.add("over");
  });
  document.addEventListener("dragleave", function (left) {
    if (left.relatedTarget === null) return clearOutlines();
    if (left.target.classList && left.target.matches("#peers > li") && !left.target.contains(left.relatedTarget)) left.target.classList.remove("over");
  });
  document.addEventListener("drop", function (dropped) {
    dropped.preventDefault();
    clearOutlines();
  });

  function peerKey(peer) {
    return (peer.protocol || "ferry") + " " + (peer.fingerprint || peer.name);
  }

  /** What a peer's card shows (not when it was last heard, nor its addresses). */
  function peerShown(peer) {
    return [peer.name, peer.protocol, peer.verified, peer.known, peer.trusted];
  }

  /** A send's element shows its peer's name, which the peers' list may learn later. */
  function sendKey(send) {
    return send.id + " " + (names.get(send.fingerprint) || "");
  }

  function peerBadges(peer) {
    const out = [badge(peer.protocol === "localsend" ? "LocalSend" : "Ferry")];
    if (peer.verified === false) out.push(badge("not verified", "warn"));
    if (peer.trusted) out.push(badge("trusted", "good"));
    else if (peer.known) out.push(badge("known"));
    return out;
  }

  /** Trust, rename and forget, as ferry trust and ferry forget: the whole key shown to
      compare before trusting it. */
  function manage(peer) {
    const box = el("details", "manage");
    const summary = el("summary", "", peer.trusted ? "Rename or forget" : peer.known ? "Trust or forget" : "Trust");
    summary.setAttribute("aria-label", summary.textContent + " " + F.printable(peer.name, 60));
    box.append(summary);
    const compare = el("p", "detail", "Compare with the fingerprint under This machine in Ferry on that device (or ferry identity): ");
    compare.append(el("span", "fingerprint", F.fingerprint(peer.fingerprint)));
    const form = el("form", "send");
    const label = el("label", "", "Name to remember it by");
    const input = el("input");
    input.type = "text";
    input.name = "name";
    input.value = peer.name;
    input.maxLength = 256;
    label.append(input);
    const result = el("p", "detail");
    result.setAttribute("role", "status");
    const submit = el("button", "", peer.trusted ? "Rename" : "Trust");
    submit.type = "submit";
    submit.setAttribute("aria-label", submit.textContent + " " + F.printable(peer.name, 60));
    form.append(label, submit);
    form.addEventListener("submit", function (submitted) {
      submitted.preventDefault();
      submit.disabled = true;
      api("/peers/" + encodeURIComponent(peer.fingerprint) + "/trust", { method: "POST", body: JSON.stringify({ name: input.value }) })
        .then(function (known) {
          result.className = "detail ok";
          result.textContent = "Trusted as " + F.printable(known.name, 80) + ".";
          refresh("peers");
        })
        .catch(function (error) {
          result.className = "detail error";
          result.textContent = F.printable(error.message, 300);
        })
        .finally(function () {
          submit.disabled = false;
        });
    });
    box.append(compare, form);
    if (peer.known || peer.trusted) {
      const forget = button("Forget", "danger", function () {
        return api("/peers/" + encodeURIComponent(peer.fingerprint), { method: "DELETE" }).then(function () {
          refresh("peers");
        }, function (error) {
          result.className = "detail error";
          result.textContent = F.printable(error.message, 300);
        });
      });
      forget.setAttribute("aria-label", "Forget " + F.printable(peer.name, 60));
      const buttons = el("div", "buttons");
      buttons.append(forget);
      box.append(buttons);
    }
    box.append(result);
    return box;
  }

  function renderPeer(peer) {
    const item = el("li");
    item.append(el("h3", "title", F.printable(peer.name, 80)));
    const line = el("div", "detail");
    line.append.apply(line, peerBadges(peer));
    if (peer.fingerprint) line.append(el("span", "fingerprint", F.fingerprint(peer.fingerprint).slice(0, 19)));
    item.append(line);
    // The browser's own dialog and drops first (what most people reach for), then a path or
    // the page's picker of the home folder.
    if (peer.protocol !== "localsend" && peer.fingerprint) item.append(uploads(peer, item));
    item.append(sendForm(peer, "Send"));
    // A key to trust is one the device proved (an unverified LocalSend device's is only what it
    // claims).
    if (peer.fingerprint && peer.verified !== false) item.append(manage(peer));
    return item;
  }

  function renderKnown(peer) {
    const item = el("li");
    item.append(el("h3", "title", F.printable(peer.name, 80)));
    const line = el("div", "detail");
    line.append(badge(peer.trusted ? "trusted" : "known", peer.trusted ? "good" : ""));
    line.append(el("span", "fingerprint", F.fingerprint(peer.fingerprint).slice(0, 19)));
    item.append(line, sendForm({ name: peer.name, fingerprint: peer.fingerprint, protocol: "ferry" }, "Send when it is next nearby"));
    item.append(manage({ name: peer.name, fingerprint: peer.fingerprint, known: true, trusted: peer.trusted }));
    return item;
  }

  function renderOffer(offer) {
    const item = el("li");
    const sender = offer.sender;
    item.append(el("h3", "title", F.printable(sender.name, 80) + " wants to send you " + (offer.text ? "a text" : F.contents(offer.files, offer.folders, offer.bytes) || "something")));
    const line = el("div", "detail");
    line.append(badge(sender.protocol === "ferry" ? "Ferry" : sender.protocol === "web" ? "browser" : "LocalSend"));
    const status = sender.status || "new";
    line.append(badge(status, status === "trusted" ? "good" : status === "KEY CHANGED" || status === "LOOK-ALIKE NAME" ? "bad" : ""));
    if (!sender.verified) line.append(badge("not verified", "warn"));
    item.append(line);
    if (offer.code) {
      const code = el("p", "detail", "Check that the sender sees this code: ");
      code.append(el("span", "code", offer.code));
      item.append(code);
    }
    if (offer.names && offer.names.length) {
      item.append(el("p", "detail", offer.names.slice(0, 5).map(function (name) { return F.printable(name, 120); }).join(", ") + (offer.names.length > 5 ? ", …" : "")));
    }
    const left = el("p", "detail expires");
    left.dataset.expires = offer.expires;
    item.append(left);
    const buttons = el("div", "buttons");
    const answered = el("p", "detail");
    answered.setAttribute("role", "status");
    buttons.append(
      button("Accept", "", function () {
        return api("/offers/" + encodeURIComponent(offer.id) + "/accept", { method: "POST" }).then(function () { refresh("offers"); });
      }, answered),
      button("Decline", "danger", function () {
        return api("/offers/" + encodeURIComponent(offer.id) + "/decline", { method: "POST" }).then(function () { refresh("offers"); });
      }, answered)
    );
    buttons.firstChild.setAttribute("aria-label", "Accept from " + F.printable(sender.name, 60));
    buttons.lastChild.setAttribute("aria-label", "Decline from " + F.printable(sender.name, 60));
    item.append(buttons, answered);
    return item;
  }

  function tickExpiries() {
    const now = Date.now();
    document.querySelectorAll(".expires").forEach(function (node) {
      const seconds = (Date.parse(node.dataset.expires) - now) / 1000;
      node.textContent = seconds > 0 ? "Declined automatically in " + F.duration(seconds) + " if you do not answer" : "Expired";
    });
  }

  function renderSend(send) {
    const item = el("li");
    const known = names.get(send.fingerprint);
    const to = known || (/^[0-9A-F]{64}$/.test(send.to) ? "the device " + F.fingerprint(send.to).slice(0, 19) + " …" : send.to);
    item.append(el("div", "title", "To " + F.printable(to, 80)));
    const open = send.state === "queued" || send.state === "delivering";
    if (open) {
      item.append(button("Cancel", "secondary", function () {
        return api("/sends/" + encodeURIComponent(send.id), { method: "DELETE" }).then(function () { refresh("sends"); });
      }));
      item.lastChild.setAttribute("aria-label", "Cancel the send to " + F.printable(send.to, 60));
    } else {
      item.append(el("span", "detail", ""));
    }
    let words = F.sendState(send.state) + " · " + F.progress(send.bytes, send.total);
    if (send.error) words += " · " + F.printable(send.error.message, 200);
    item.append(el("div", "detail" + (send.state === "failed" ? " error" : ""), words));
    return item;
  }

  function renderHistory(entry) {
    const item = el("li");
    item.append(el("div", "title", (entry.direction === "received" ? "From " : "To ") + F.printable(entry.peer, 80)));
    item.append(el("span", "detail", new Date(entry.at).toLocaleString()));
    const words = { done: entry.direction === "received" ? "Received" : "Sent", failed: "Failed", declined: "Declined", cancelled: "Cancelled" };
    const via = { ferry: "Ferry", localsend: "LocalSend", web: "a browser" };
    item.append(el("div", "detail" + (entry.outcome === "failed" ? " error" : ""), (words[entry.outcome] || entry.outcome) + " · " + F.contents(entry.files, 0, entry.bytes) + " · " + (via[entry.protocol] || entry.protocol)));
    return item;
  }

  /** A transfer under way: one coming in (`arriving`: the API's Transfer, cancellable) with
      its latest progress event, or one going out (its progress event alone). */
  function renderTransfer(row) {
    const event = row.event || { peer: row.arriving.peer, bytes: row.arriving.bytes, total: row.arriving.total, files: row.arriving.files, files_done: 0, bytes_per_second: 0 };
    const item = el("li");
    item.append(el("div", "title", (row.arriving ? "From " : "To ") + F.printable(event.peer, 80)));
    if (row.arriving) {
      const stop = button("Cancel", "secondary", function () {
        return api("/transfers/" + encodeURIComponent(row.arriving.id), { method: "DELETE" }).then(function () {
          refresh("transfers");
        });
      });
      stop.setAttribute("aria-label", "Cancel the transfer from " + F.printable(event.peer, 60));
      item.append(stop);
    } else {
      item.append(el("span", "detail", ""));
    }
    item.append(el("span", "detail", event.files_done + " of " + event.files + " files"));
    const bar = el("progress");
    if (typeof event.total === "number" && event.total > 0) {
      bar.max = event.total;
      bar.value = Math.min(event.bytes, event.total);
    }
    bar.setAttribute("aria-label", "Transfer with " + F.printable(event.peer, 60));
    item.append(bar, el("div", "detail", F.progress(event.bytes, event.total, event.bytes_per_second)));
    return item;
  }

  // MARK: Loading and refreshing

  const loaders = {
    status: function () {
      return api("/status").then(renderStatus);
    },
    peers: function () {
      return api("/peers").then(function (peers) {
        peers.known.concat(peers.around).forEach(function (peer) {
          if (peer.fingerprint) names.set(peer.fingerprint, peer.name);
        });
        // This machine is around too (its own daemon announces it): not a device to send to.
        const others = peers.around.filter(function (peer) { return !me || peer.fingerprint !== me; });
        const around = new Set(others.map(function (peer) { return peer.fingerprint; }));
        fill("peers", "peers-empty", others, renderPeer, peerKey, peerShown);
        fill("sends", "sends-empty", sends, renderSend, sendKey);
        fill("known", "known-empty", peers.known.filter(function (peer) { return !around.has(peer.fingerprint); }), renderKnown, peerKey, peerShown);
      });
    },
    offers: function () {
      return api("/offers").then(function (list) {
        // A sender who starts waiting is said out loud (the countdowns are not).
        const before = new Set(offers.map(function (offer) { return offer.id; }));
        const fresh = list.offers.filter(function (offer) { return !before.has(offer.id); });
        if (fresh.length) {
          $("announce").textContent = fresh.map(function (offer) {
            return F.printable(offer.sender.name, 60) + " wants to send you " + (offer.text ? "a text" : F.contents(offer.files, offer.folders, offer.bytes) || "something");
          }).join(". ");
        }
        offers = list.offers;
        fill("offers", "offers-empty", offers, renderOffer, function (offer) { return offer.id; });
        tickExpiries();
      });
    },
    sends: function () {
      return api("/sends").then(function (list) {
        sends = list.sends.slice(0, 50);
        fill("sends", "sends-empty", sends, renderSend, sendKey);
      });
    },
    transfers: function () {
      return api("/transfers").then(function (list) {
        arriving = list.transfers;
        renderTransfers();
      });
    },
    history: function () {
      return api("/history?limit=30").then(function (list) {
        fill("history", "history-empty", list.entries, renderHistory, function (entry) { return entry.id; });
      });
    },
  };

  /** Loads `names` again, at most once per 150 ms each (a burst of events, one request). */
  function refresh() {
    for (let i = 0; i < arguments.length; i++) pending.add(arguments[i]);
    if (flushTimer === null) flushTimer = setTimeout(flush, 150);
  }

  async function flush() {
    flushTimer = null;
    const names = Array.from(pending);
    pending.clear();
    for (const name of names) {
      try {
        await loaders[name]();
      } catch (error) {
        showError(error);
      }
    }
  }

  function renderTransfers() {
    const rows = arriving.map(function (transfer) {
      return { arriving: transfer, event: transfers.get(transfer.peer) || null };
    });
    const incoming = new Set(arriving.map(function (transfer) { return transfer.peer; }));
    transfers.forEach(function (event, peer) {
      if (!incoming.has(peer)) rows.push({ arriving: null, event: event });
    });
    fill("transfers", "transfers-empty", rows, renderTransfer, function (row) {
      return row.arriving ? row.arriving.id : "out " + row.event.peer;
    });
  }

  /** What each event changes. */
  function handle(event) {
    switch (event.event) {
      case "progress":
        transfers.set(event.peer, event);
        if (!arriving.some(function (transfer) { return transfer.peer === event.peer; })) refresh("transfers");
        renderTransfers();
        break;
      case "done":
        transfers.delete(event.peer);
        renderTransfers();
        refresh("history", "sends", "offers", "transfers");
        break;
      case "offer":
        refresh("transfers");
        break;
      case "around":
        refresh("peers");
        break;
      case "queued":
      case "delivering":
        refresh("sends");
        break;
      case "send-ended":
        refresh("sends", "history");
        break;
      case "asking":
      case "accepted":
      case "declined":
      case "withdrawn":
      case "refused":
        refresh("offers", "history");
        break;
      default:
        break;
    }
  }

  function connect() {
    if (signedOutShown) return;
    source = new EventSource("/events?key=" + encodeURIComponent(key()));
    source.addEventListener("open", function () {
      setConnection("live", "Live");
      refresh("status", "peers", "offers", "transfers", "sends", "history");
    });
    source.addEventListener("message", function (message) {
      let parsed = null;
      try {
        parsed = JSON.parse(message.data);
      } catch (error) {
        return;
      }
      handle(parsed);
    });
    source.addEventListener("error", function () {
      if (source.readyState !== EventSource.CLOSED) {
        setConnection("wait", "Reconnecting…");
        return;
      }
      // Refused (signed out, the daemon restarted) or gone: asked once why, then again later.
      setConnection("wait", "The daemon does not answer; trying again…");
      api("/status").then(function () {
        setTimeout(connect, 1000);
      }, function () {
        if (!signedOutShown) setTimeout(connect, 5000);
      });
    });
  }

  setInterval(tickExpiries, 1000);
  settleKey().catch(function () {
    offered = null;
  }).finally(function () {
    refresh("status", "peers", "offers", "transfers", "sends", "history");
    connect();
  });
})();
