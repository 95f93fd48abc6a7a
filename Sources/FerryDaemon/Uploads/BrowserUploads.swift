import Ferry
import FerryAPI
import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// Sends of files the daemon cannot read from disk — a browser's, dropped on the web page
/// (`POST /v1/uploads`): each file becomes a FIFO in a folder of its own under
/// `$FERRY_HOME/uploads`, offered to the receiver as a stream (``ResourceItem/init(streamingFrom:path:)``),
/// and its bytes, uploaded one file after another (``write(_:index:body:)``), are passed
/// through the FIFO to the send as they come: nothing is copied to disk, nothing is kept
/// whole in memory. Each upload is an outbox send for now, listed and cancelled with the
/// others, tried once. At most ``maximumOpen`` at once; one the browser leaves waiting for
/// ``stallLimit`` seconds is cancelled. Any thread.
package final class BrowserUploads: Sendable {
  /// The most uploads under way at once (each holds a send, and a writer's thread while its
  /// bytes come).
  package static let maximumOpen = 4
  /// How long the browser may keep an upload waiting for its next bytes, in seconds.
  static let stallLimit: Double = 60
  /// How often each upload is looked at (its send over, its browser stalled), in seconds.
  static let watchEvery: Duration = .seconds(2)

  struct Upload: Sendable {
    /// Its folder of FIFOs (and empty folders).
    let folder: URL
    /// The FIFO (or folder) of each of its files.
    let sources: [String]
    /// Its receiver's key (hex).
    let fingerprint: String
    var state: UploadState
    /// The file being written (``write(_:index:body:)``).
    var writing: Task<Written, Never>?
  }

  let folder: URL
  let sends: DaemonSends
  let uploads = Mutex<[String: Upload]>([:])

  /// Uploads whose FIFOs are made in `folder` (what an earlier run left there is removed: its
  /// sends ended when it stopped), sent through `sends`.
  package init(folder: URL, sends: DaemonSends) {
    // Named as the kernel names it (links resolved): /proc/self/fd shows the FIFOs so.
    let parent = folder.deletingLastPathComponent()
    let resolved = realpath(parent.path, nil).map { path in
      defer { free(path) }
      return URL(fileURLWithPath: String(cString: path), isDirectory: true)
    }
    self.folder = (resolved ?? parent).appendingPathComponent(folder.lastPathComponent)
    self.sends = sends
    try? FileManager.default.removeItem(at: self.folder)
  }

  /// Seconds on a clock that only goes forward.
  static func now() -> Double { ProcessInfo.processInfo.systemUptime }

  /// Starts an upload of `request`'s files to its receiver: the send is queued (for now,
  /// tried once) and its files' bytes are then awaited in order.
  ///
  /// - Throws: ``APIProblem``: too many uploads (or one to the same device under way), bad
  ///   paths or sizes, an unknown receiver, a LocalSend device, a full outbox.
  package func start(_ request: Components.Schemas.UploadRequest) async throws(APIProblem)
    -> OutboxEntry
  {
    let files = request.files
    guard (1...Outbox.maximumFiles).contains(files.count) else {
      throw APIProblem.badRequest("an upload holds 1 to \(Outbox.maximumFiles) files")
    }
    var total: UInt64 = 0
    for file in files {
      guard file.size >= 0, file.folder != true || file.size == 0 else {
        throw APIProblem.badRequest("a size is 0 or more (0 for a folder)")
      }
      let (sum, overflow) = total.addingReportingOverflow(UInt64(file.size))
      guard !overflow, sum <= OutboxFiles.maximumBytes else {
        throw APIProblem(413, "too-large", "an upload holds at most 2^62 bytes")
      }
      total = sum
    }
    guard request.to.utf8.count <= 256 else { throw APIProblem.badRequest("to is too long") }
    let target = try sends.resolve(request.to, carrier: nil)
    guard target.carrier == .ferry else {
      throw APIProblem(
        409, "localsend-upload",
        "a LocalSend device takes files from this machine's disk only: choose them with the "
          + "page's own file picker")
    }
    let id = DaemonID.new()
    let key = target.key.hexString
    let refusal = uploads.withLock { uploads -> APIProblem? in
      guard uploads.count < Self.maximumOpen else {
        return APIProblem(
          429, "busy", "\(Self.maximumOpen) uploads are under way: wait for one to end")
      }
      // One at a time to a device: sends to one peer go one after another, so a second
      // upload would hold its browser's request open behind the first's. (One whose bytes all
      // came ends soon: the next may queue behind it.)
      guard
        !uploads.values.contains(where: { $0.fingerprint == key && $0.state.phase != .finished })
      else {
        return APIProblem(
          409, "busy-device", "an upload to this device is under way: wait for it to end")
      }
      // Held while the send is made: counted against the caps from now (as an upload whose
      // bytes are still to come).
      uploads[id] = Upload(
        folder: folder.appendingPathComponent(id), sources: [], fingerprint: key,
        state: UploadState(items: [.init(size: 0, folder: false)], now: Self.now()))
      return nil
    }
    if let refusal { throw refusal }
    do {
      // Thousands of mkfifo(3) and stat(2) calls: off the daemon's tasks.
      let (entry, upload) = try await OutboxFiles.offThread { [self] () throws(APIProblem) in
        try makeSend(id, request, target: target)
      }
      uploads.withLock { $0[id] = upload }
      try sends.outbox.add(entry)
      sends.courier.poke()
      Task { await self.watch(id) }
      return entry
    } catch {
      discard(id)
      throw error
    }
  }

  /// The send of upload `id` and its FIFOs.
  private func makeSend(
    _ id: String, _ request: Components.Schemas.UploadRequest, target: DaemonSends.Target
  ) throws(APIProblem) -> (OutboxEntry, Upload) {
    let here = folder.appendingPathComponent(id)
    guard mkdir(folder.path, 0o700) == 0 || errno == EEXIST, mkdir(here.path, 0o700) == 0 else {
      throw APIProblem(
        500, "unwritable", "cannot make \(here.path): \(String(cString: strerror(errno)))")
    }
    var items: [ResourceItem] = []
    var sources: [String] = []
    var files: [OutboxEntry.File] = []
    for (index, file) in request.files.enumerated() {
      let source = here.appendingPathComponent(String(index)).path
      let folder = file.folder == true
      guard (folder ? mkdir(source, 0o700) : mkfifo(source, 0o600)) == 0 else {
        throw APIProblem(
          500, "unwritable", "cannot make \(source): \(String(cString: strerror(errno)))")
      }
      var status = stat()
      lstat(source, &status)
      let url = URL(fileURLWithPath: source)
      items.append(
        folder
          ? ResourceItem(folderAt: url, path: file.path)
          : ResourceItem(streamingFrom: url, path: file.path))
      sources.append(source)
      files.append(
        OutboxEntry.File(
          path: file.path, source: source, folder: folder, size: UInt64(file.size),
          modified: Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec),
          device: UInt64(status.st_dev), inode: UInt64(status.st_ino), status: .pending,
          streamed: folder ? nil : true))
    }
    do {
      // The receiver's rules, before it is asked: relative paths, no repeats, no file that is
      // also a folder.
      let kept = try ResourceItem.checked(items)
      guard kept.count == items.count else {
        throw ResourceError.unsafePath(.duplicate("a path named twice"))
      }
    } catch {
      throw APIProblem(400, "unsafe-path", "\(error)")
    }
    var top: [String] = []
    for file in request.files {
      let first = String(file.path.split(separator: "/", maxSplits: 1).first ?? "")
      if !top.contains(first) { top.append(first) }
      if top.count == 20 { break }
    }
    let now = Date()
    var entry = OutboxEntry(
      id: id, to: request.to, fingerprint: target.key.hexString, byKey: target.byKey,
      carrier: .ferry, paths: top, when: .now, created: now,
      expires: now.addingTimeInterval(Double(Outbox.nowWindow.components.seconds)),
      files: files)
    entry.upload = true
    let upload = Upload(
      folder: here, sources: sources, fingerprint: target.key.hexString,
      state: UploadState(
        items: request.files.map { .init(size: UInt64($0.size), folder: $0.folder == true) },
        now: Self.now()))
    return (entry, upload)
  }

  /// Forgets upload `id` and removes its FIFOs.
  func discard(_ id: String) {
    guard let folder = uploads.withLock({ $0.removeValue(forKey: id) })?.folder else { return }
    // Up to 10 000 unlinks: on a thread of their own, not the daemon's tasks.
    Thread.detachNewThread { try? FileManager.default.removeItem(at: folder) }
  }

  /// Whether the send of upload `id` reads a file after `index` now — it holds that file's
  /// FIFO open, as this process's descriptors show (`/proc/self/fd`) — so that it will never
  /// read file `index` (its receiver skipped it: one it has already). The paths are taken once.
  func readsPast(_ id: String, _ index: Int) -> @Sendable () -> Bool {
    let later = uploads.withLock { uploads -> Set<String> in
      guard let upload = uploads[id] else { return [] }
      // FIFOs only: the daemon itself looks into an empty folder's directory (to check it).
      return Set(
        upload.sources.indices.filter { $0 > index && !upload.state.items[$0].folder }
          .map { upload.sources[$0] })
    }
    return { Self.holdsOpen(later) }
  }

  /// Whether this process holds open one of `later` (paths as the kernel names them).
  static func holdsOpen(_ later: Set<String>) -> Bool {
    guard !later.isEmpty,
      let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
    else {
      return false
    }
    return names.contains { name in
      guard
        let target = try? FileManager.default.destinationOfSymbolicLink(
          atPath: "/proc/self/fd/" + name)
      else { return false }
      return later.contains(target)
    }
  }

  /// Whether upload `id` is over: its send ended or is being cancelled, or it was forgotten.
  func isOver(_ id: String) -> Bool {
    guard uploads.withLock({ $0[id] != nil }), let entry = sends.outbox.entry(id) else {
      return true
    }
    return entry.state.ended || entry.cancelRequested == true
  }

  /// Looks at upload `id` until its send ends: then its FIFOs go; a browser that stalls has
  /// its send cancelled.
  private func watch(_ id: String) async {
    while true {
      try? await Task.sleep(for: Self.watchEvery)
      guard let upload = uploads.withLock({ $0[id] }) else { return }
      if sends.outbox.entry(id)?.state.ended != false {
        upload.writing?.cancel()
        discard(id)
        return
      }
      if upload.state.stalled(now: Self.now(), limit: Self.stallLimit) {
        // The send first, then the request: its FIFO closes only once the send stopped.
        _ = await sends.cancel(id)
        upload.writing?.cancel()
      }
    }
  }
}
