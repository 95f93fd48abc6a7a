/* Files the browser holds — dropped on a device, or chosen with the browser's own dialog —
   sent through the daemon as they are read: POST /api/v1/uploads names them (paths at the
   receiver, sizes), then each file's bytes go, one after another, to
   PUT /api/v1/uploads/{id}/files/{index}. The browser reads each file from disk as it sends it;
   nothing is held whole in memory. */
/* global module */
"use strict";

const FerryUpload = (function () {
  /** The most files one upload holds (the daemon's limit). */
  const maximumFiles = 10000;

  /** How deep a dropped folder is walked (a path has at most 4096 bytes anyway). */
  const maximumDepth = 256;

  /** A dropped entry's files and empty folders, walked (FileSystemEntry), each as
      { path, file } or { path, folder: true }, into `out`: past maximumFiles entries, or
      maximumDepth folders deep, the walk stops with one entry too many (which `send`
      refuses). */
  async function walk(entry, prefix, out, depth) {
    const path = prefix ? prefix + "/" + entry.name : entry.name;
    if (out.length > maximumFiles) return;
    if ((depth || 0) > maximumDepth) throw new Error("A folder more than " + maximumDepth + " folders deep cannot be sent.");
    if (entry.isFile) {
      const file = await new Promise(function (resolve, reject) { entry.file(resolve, reject); });
      out.push({ path: path, file: file });
      return;
    }
    if (!entry.isDirectory) return;
    const reader = entry.createReader();
    const children = [];
    // readEntries gives a folder's entries a batch at a time, until an empty batch.
    for (;;) {
      const batch = await new Promise(function (resolve, reject) { reader.readEntries(resolve, reject); });
      if (batch.length === 0) break;
      children.push.apply(children, batch);
      if (children.length > maximumFiles) break;
    }
    if (children.length === 0) {
      out.push({ path: path, folder: true });
      return;
    }
    children.sort(function (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0; });
    for (const child of children) await walk(child, path, out, (depth || 0) + 1);
  }

  /** What a drop holds. The entries are taken during the drop event itself (the browser
      empties the DataTransfer after it), then walked. A browser without entries gives its
      files, each under its own name. */
  function dropped(transfer) {
    const entries = [];
    const items = transfer.items ? Array.from(transfer.items) : [];
    for (const item of items) {
      if (item.kind !== "file") continue;
      // A folder is walked by its entry; a file is taken as it is (under its folder's path when
      // it has one: the files a folder's dialog chose).
      const entry = typeof item.webkitGetAsEntry === "function" ? item.webkitGetAsEntry() : null;
      entries.push({ entry: entry, file: item.getAsFile() });
    }
    if (items.length === 0 && transfer.files) {
      Array.from(transfer.files).forEach(function (file) { entries.push({ file: file }); });
    }
    return async function () {
      const out = [];
      for (const one of entries) {
        if (one.entry && one.entry.isDirectory) await walk(one.entry, "", out, 0);
        else if (one.file) out.push({ path: relative(one.file), file: one.file });
        else throw new Error("Something dropped could not be read as a file (a link to a web page, say).");
      }
      return out;
    };
  }

  /** A file from an input's list: under its folder when a folder was chosen. */
  function relative(file) {
    return file.webkitRelativePath || file.name;
  }

  /** Files chosen with an input (`multiple`, or `webkitdirectory` for a folder). */
  function chosen(list) {
    return Array.from(list).map(function (file) { return { path: relative(file), file: file }; });
  }

  /** What the daemon is told of `items`. */
  function request(to, items) {
    return {
      to: to,
      files: items.map(function (item) {
        return item.folder ? { path: item.path, size: 0, folder: true } : { path: item.path, size: item.file.size };
      })
    };
  }

  /** Sends `items` to `to` (a fingerprint) through `api` (the page's JSON helper) and
      `put` (one file's bytes): `started(send)` once the daemon took the list. Throws the
      daemon's words when it refuses, or when a file cannot be read. */
  async function send(to, items, api, put, started) {
    if (items.length === 0) throw new Error("nothing to send: no file was dropped or chosen");
    if (items.length > maximumFiles) throw new Error("That is more than " + maximumFiles.toLocaleString("en") + " files: send fewer at a time.");
    const created = await api("/uploads", { method: "POST", body: JSON.stringify(request(to, items)) });
    started(created);
    try {
      for (let index = 0; index < items.length; index++) {
        if (items[index].folder) continue;
        await put("/uploads/" + encodeURIComponent(created.id) + "/files/" + index, items[index].file);
      }
    } catch (error) {
      // A file the browser could not read, say: the send is not left waiting for it.
      await api("/sends/" + encodeURIComponent(created.id), { method: "DELETE" }).catch(function () {});
      throw error;
    }
    return created;
  }

  return { dropped: dropped, chosen: chosen, request: request, send: send, maximumFiles: maximumFiles };
})();

if (typeof module !== "undefined") module.exports = FerryUpload;
