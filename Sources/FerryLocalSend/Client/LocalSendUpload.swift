import Crypto
import Ferry
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Where a LocalSend device listens, and how it must prove itself.
public struct LocalSendTarget: Sendable, CustomStringConvertible {
  /// Its address (IPv4, IPv6 or a name).
  public var host: String
  /// Its HTTP(S) port.
  public var port: Int
  /// The fingerprint its certificate must have (as it announced it); nil accepts any (an
  /// older app reached by address: nothing announced one), and the one presented is reported.
  public var fingerprint: Fingerprint?
  /// Plain HTTP (its "encryption off"): nothing is verified.
  public var plainHTTP: Bool

  /// Makes one from its fields.
  public init(host: String, port: Int, fingerprint: Fingerprint?, plainHTTP: Bool = false) {
    self.host = host
    self.port = port
    self.fingerprint = fingerprint
    self.plainHTTP = plainHTTP
  }

  /// `host:port` (`[v6]:port`), or the error in words.
  public var description: String {
    host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
  }
}

/// How a LocalSend device took a text message.
public enum LocalSendTextOutcome: Sendable, Equatable {
  /// It showed the text (its 204).
  case shown
  /// It took the text as a file (`message.txt`): it answered with a token, and the text was
  /// uploaded.
  case file
}

/// Why sending to a LocalSend device failed.
public enum LocalSendSendError: Error, Sendable, CustomStringConvertible {
  /// The person (or the app's policy) declined (403).
  case declined(String)
  /// Another session is under way there (409).
  case busy
  /// It wants a PIN, or the PIN given is wrong (401).
  case pinRequired
  /// Too many wrong PINs from here (429).
  case tooManyPinAttempts
  /// It refused the files for another reason (its status and words).
  case refused(Int, String)
  /// The request itself failed.
  case request(LocalSendRequestError)
  /// A file could not be read here.
  case unreadable(String)
  /// Cancelled here.
  case cancelled

  /// `host:port` (`[v6]:port`), or the error in words.
  public var description: String {
    switch self {
    case .declined(let why): return why.isEmpty ? "declined" : "declined: \(why)"
    case .busy: return "the device is busy with another transfer"
    case .pinRequired: return "the device wants a PIN (--pin), or the PIN given is wrong"
    case .tooManyPinAttempts: return "too many wrong PINs: the device refuses this address for now"
    case .refused(let status, let why):
      return "refused (HTTP \(status))\(why.isEmpty ? "" : ": \(why)")"
    case .request(let error): return error.description
    case .unreadable(let why): return "cannot read \(why)"
    case .cancelled: return "cancelled"
    }
  }
}

/// One file as sent to a LocalSend device, and how it ended.
public struct LocalSendSentFile: Sendable {
  /// Its path as offered (`/`-joined).
  public let path: String
  /// Its size in bytes, as announced.
  public let size: UInt64
  /// Its SHA-256 (lower-case hex), as announced.
  public let sha256: String?
  /// The same SHA-256 as its 32 bytes.
  public var digest: [UInt8]? {
    sha256.flatMap(LocalSendJSON.hexBytes).flatMap { $0.count == 32 ? $0 : nil }
  }
  /// nil while it was not sent; its HTTP status once it was (200: stored and, when the
  /// receiver checks it, verified).
  public var status: Int?
  /// Why it failed, in the receiver's words.
  public var reason: String?
  /// Whether the receiver left it out (it did not ask for it).
  public var skipped = false
}

/// Sends files (or a text) to a LocalSend device: `prepare-upload` (with each file's size and
/// SHA-256, and this device's description), then each accepted file's `upload`, a few at once;
/// a cancel tells the device (`cancel`). Whole files only: the protocol cannot resume one.
public final class LocalSendUpload: Sendable {
  /// How long the device may take to answer the prepare-upload (a person decides).
  public static let decisionTimeout: Duration = .seconds(130)
  /// Uploads at once.
  public let parallel: Int

  private let client: LocalSendClient
  private let me: LocalSendDevice
  private let session = Mutex<(id: String, target: LocalSendTarget)?>(nil)
  private let cancelled = Atomic<Bool>(false)
  /// The last session whose uploads were cut off, until the device said it ended it.
  private let cutSession = Mutex<(id: String, target: LocalSendTarget)?>(nil)
  /// The device a prepare-upload waits on (a person there decides), for ``cancel()``.
  private let preparing = Mutex<LocalSendTarget?>(nil)
  /// The connections uploads are using or keeping, closed by ``cancel()``.
  private let connections = Mutex<[ObjectIdentifier: LocalSendConnection]>([:])

  /// - Parameters:
  ///   - identity: This side's certificate (presented to the device).
  ///   - me: This device as described in the prepare-upload.
  /// - Throws: NIOSSL's error when the identity cannot make a TLS context.
  public init(identity: Identity, me: LocalSendDevice, parallel: Int = 8) throws {
    client = LocalSendClient(
      tls: try LocalSendTLS(identity: identity, senderCheck: .certificate))
    self.me = me
    self.parallel = max(1, min(parallel, 16))
  }

  /// Sends `items` (files with their offered paths) to `target`, with `pin` if one is needed;
  /// `progress` follows the bytes (its snapshots are what a progress bar draws). `previous`:
  /// what the last attempt returned (or ``plan(_:)``): only the files it did not deliver are
  /// offered, and digests are not computed again.
  ///
  /// - Returns: Each file, with its status.
  /// - Throws: ``LocalSendSendError`` when nothing could be sent at all.
  public func send(
    _ items: [(url: URL, path: String, size: UInt64)], to target: LocalSendTarget,
    pin: String? = nil, progress: TransferProgress, previous: [LocalSendSentFile]? = nil,
    onAccepted: @escaping @Sendable (_ accepted: Int) -> Void = { _ in }
  ) async throws(LocalSendSendError) -> [LocalSendSentFile] {
    var sent: [LocalSendSentFile]
    if let previous, previous.count == items.count {
      sent = previous
    } else {
      sent = try await Self.plan(items)
    }
    let offered = items.indices.filter { sent[$0].status != 200 && !sent[$0].skipped }
    var files: [String: LocalSendFile] = [:]
    for index in offered {
      let item = items[index]
      let id = "f\(index)"
      files[id] = LocalSendFile(
        id: id, fileName: item.path, size: item.size, fileType: Self.mimeType(item.path),
        sha256: sent[index].sha256, metadata: Self.metadata(item.url))
      (sent[index].status, sent[index].reason) = (nil, nil)
      progress.advance(index, to: 0)
    }
    // A session an earlier attempt left cut off may still hold the device (busy to this
    // prepare-upload): it is ended first.
    if let stale = cutSession.withLock({ $0 }) {
      await end(session: stale.id, at: stale.target)
    }
    preparing.withLock { $0 = target }
    let answer: PrepareUploadResponse?
    do throws(LocalSendSendError) {
      answer = try await prepare(PrepareUploadRequest(info: me, files: files), to: target, pin: pin)
      preparing.withLock { $0 = nil }
    } catch {
      preparing.withLock { $0 = nil }
      throw error
    }
    guard let response = answer else {
      // 204: the device wants none of them (it has them, or skips them).
      for index in offered {
        (sent[index].skipped, sent[index].status) = (true, 204)
        progress.complete(index, unsent: true)
      }
      return sent
    }
    session.withLock { $0 = (response.sessionId, target) }
    defer { session.withLock { $0 = nil } }
    onAccepted(response.files.count)
    // Left out by the receiver: done, as the receiver wants.
    for index in offered where response.files["f\(index)"] == nil {
      sent[index].skipped = true
      sent[index].status = 200
      progress.complete(index, unsent: true)
    }
    let queue = NIOLockedValueBox(offered.filter { response.files["f\($0)"] != nil })
    let results = NIOLockedValueBox(sent)
    // Each worker keeps its connection for the next file (keep-alive): one TLS handshake per
    // worker, not per file.
    let idle = NIOLockedValueBox<[LocalSendConnection]>([])
    defer { for connection in idle.withLockedValue({ $0 }) { connection.close() } }
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<parallel {
        group.addTask {
          while !self.cancelled.load(ordering: .relaxed),
            let index = queue.withLockedValue({ $0.isEmpty ? nil : $0.removeFirst() })
          {
            let (status, reason) = await self.upload(
              items[index], index: index, token: response.files["f\(index)"] ?? "",
              session: response.sessionId, to: target, progress: progress, pool: idle)
            results.withLockedValue {
              $0[index].status = status
              $0[index].reason = reason
            }
            progress.complete(index, failed: status != 200)
          }
        }
      }
    }
    if cancelled.load(ordering: .relaxed) { throw .cancelled }
    let returned = results.withLockedValue { $0 }
    if offered.contains(where: { returned[$0].status == 0 }) {
      // Uploads were cut off: the device's session waits for them. Ended now if the device
      // can be reached, else before the next attempt.
      cutSession.withLock { $0 = (response.sessionId, target) }
      await end(session: response.sessionId, at: target)
    } else {
      cutSession.withLock { $0 = nil }
    }
    return returned
  }

  /// What ``send(_:to:pin:progress:previous:onAccepted:)`` starts from: each file with its
  /// SHA-256, nothing sent yet. Computed once for every attempt of a send.
  ///
  /// - Throws: ``LocalSendSendError/unreadable(_:)`` for a file that cannot be read.
  public static func plan(_ items: [(url: URL, path: String, size: UInt64)])
    async throws(LocalSendSendError) -> [LocalSendSentFile]
  {
    let digests = try await digests(of: items.map(\.url))
    return items.indices.map {
      LocalSendSentFile(path: items[$0].path, size: items[$0].size, sha256: digests[$0])
    }
  }

  /// Sends a text message (a `text/plain` file whose text is its preview). A device that shows
  /// it answers 204; one that answers 200 with a token for it (third-party receivers do, and
  /// LocalSend's own sender honours that) is sent the text as the file.
  ///
  /// - Returns: Whether the device showed the text, or took it as a file.
  /// - Throws: ``LocalSendSendError`` when it took it neither way.
  @discardableResult
  public func send(text: String, to target: LocalSendTarget, pin: String? = nil)
    async throws(LocalSendSendError) -> LocalSendTextOutcome
  {
    let bytes = Array(text.utf8)
    let file = LocalSendFile(
      id: "text", fileName: "message.txt", size: UInt64(bytes.count), fileType: "text/plain",
      sha256: Self.hex(SHA256.hash(data: bytes)), preview: text)
    guard
      let answer = try await prepare(
        PrepareUploadRequest(info: me, files: ["text": file]), to: target, pin: pin)
    else { return .shown }
    guard let token = answer.files["text"] else {
      // A session that wants none of it: nothing was shown, nothing arrived.
      throw .refused(200, "it accepted the message but asked for none of it")
    }
    session.withLock { $0 = (answer.sessionId, target) }
    defer { session.withLock { $0 = nil } }
    let path =
      "\(LocalSendProtocol.Path.upload)?sessionId=\(Self.escaped(answer.sessionId))"
      + "&fileId=text&token=\(Self.escaped(token))"
    let uploaded: LocalSendClient.Answer
    do {
      uploaded = try await client.request(
        .POST, host: target.host, port: target.port, path: path, body: .bytes(bytes),
        expecting: target.fingerprint, plainHTTP: target.plainHTTP,
        answerTimeout: Self.uploadAnswerTimeout)
    } catch {
      throw .request(error)
    }
    guard uploaded.status.code == 200 else {
      throw .refused(
        Int(uploaded.status.code), String(decoding: uploaded.body.prefix(512), as: UTF8.self))
    }
    return .file
  }

  /// Asks `target` who it is (`GET /api/localsend/v2/info`): what it says, and the
  /// fingerprint of the certificate it presented (nil over plain HTTP) — which, not what it
  /// says, is its key.
  ///
  /// - Throws: ``LocalSendSendError`` when it cannot be reached or answers nonsense.
  public func info(of target: LocalSendTarget) async throws(LocalSendSendError)
    -> (device: LocalSendDevice, presented: Fingerprint?)
  {
    let answer: LocalSendClient.Answer
    do {
      answer = try await client.request(
        .GET, host: target.host, port: target.port, path: LocalSendProtocol.Path.info,
        expecting: target.fingerprint, plainHTTP: target.plainHTTP)
    } catch {
      throw .request(error)
    }
    guard answer.status.code == 200 else {
      throw .refused(Int(answer.status.code), "its /info did not answer")
    }
    do throws(LocalSendJSONError) {
      let device = try LocalSendJSON.decode(LocalSendDevice.self, from: answer.body).validated()
      return (device, answer.certificate)
    } catch {
      throw .refused(200, "its /info: \(error)")
    }
  }

  /// Cancels the session under way: the uploads stop (their connections are closed) and the
  /// device is told (`cancel`, waited for at most 2 s). Any task.
  public func cancel() async {
    cancelled.store(true, ordering: .relaxed)
    for connection in connections.withLock({ $0.values }) { connection.close() }
    // The session under way, or one cut off and not ended yet (Ctrl-C between attempts); or
    // the question still asked there (a cancel without a session ends whatever this address
    // prepared).
    if let (id, current) = session.withLock({ $0 }) ?? cutSession.withLock({ $0 }) {
      await end(session: id, at: current)
    } else if let asked = preparing.withLock({ $0 }) {
      await tell(LocalSendProtocol.Path.cancel, at: asked)
    }
  }

  /// Ends session `id` at `target` (`cancel`), at most 2 s; whether it answered.
  private func end(session id: String, at target: LocalSendTarget) async {
    if await tell("\(LocalSendProtocol.Path.cancel)?sessionId=\(Self.escaped(id))", at: target) {
      cutSession.withLock { if $0?.id == id { $0 = nil } }
    }
  }

  /// POSTs `path` to `target`, waiting at most 2 s; whether it answered 2xx in time.
  @discardableResult
  private func tell(_ path: String, at target: LocalSendTarget) async -> Bool {
    let client = self.client
    let answered = NIOLockedValueBox(false)
    // At most 2 s: whichever ends first (a request in NIO is not stopped by cancelling).
    let first = NIOLockedValueBox(true)
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      let resume: @Sendable () -> Void = {
        if first.withLockedValue({ first in
          defer { first = false }
          return first
        }) {
          done.resume()
        }
      }
      Task {
        let answer = try? await client.request(
          .POST, host: target.host, port: target.port, path: path,
          expecting: target.fingerprint, plainHTTP: target.plainHTTP,
          answerTimeout: .seconds(2))
        if let answer, (200..<300).contains(answer.status.code) {
          answered.withLockedValue { $0 = true }
        }
        resume()
      }
      Task {
        try? await Task.sleep(for: .seconds(2))
        resume()
      }
    }
    return answered.withLockedValue { $0 }
  }

  // MARK: Requests

  /// The prepare-upload: its answer, nil when there is nothing to upload (204).
  private func prepare(
    _ request: PrepareUploadRequest, to target: LocalSendTarget, pin: String?
  ) async throws(LocalSendSendError) -> PrepareUploadResponse? {
    var path = LocalSendProtocol.Path.prepareUpload
    if let pin { path += "?pin=\(Self.escaped(pin))" }
    let answer: LocalSendClient.Answer
    do {
      answer = try await client.request(
        .POST, host: target.host, port: target.port, path: path,
        body: .json(LocalSendJSON.encode(request)), expecting: target.fingerprint,
        plainHTTP: target.plainHTTP, answerTimeout: Self.decisionTimeout)
    } catch {
      throw .request(error)
    }
    let words = Self.words(of: answer.body)
    switch answer.status.code {
    case 200:
      do throws(LocalSendJSONError) {
        return try LocalSendJSON.decode(PrepareUploadResponse.self, from: answer.body)
      } catch {
        throw .refused(200, error.description)
      }
    case 204: return nil
    case 401: throw .pinRequired
    case 403: throw .declined(words)
    case 409: throw .busy
    case 429: throw .tooManyPinAttempts
    default: throw .refused(Int(answer.status.code), words)
    }
  }

  /// What an answer's body says, for a person: the `message` of a JSON body (LocalSend's
  /// apps answer `{"message": "…"}`), else its text, at most 512 bytes; empty for a body of
  /// nothing worth showing.
  static func words(of body: [UInt8]) -> String {
    let head = Array(body.prefix(4096))
    if let object = try? JSONSerialization.jsonObject(with: Data(head)) as? [String: Any] {
      return (object["message"] as? String).map { String($0.prefix(512)) } ?? ""
    }
    let text = String(decoding: head.prefix(512), as: UTF8.self)
      .trimmingCharacters(in: .whitespacesAndNewlines)
    return text.hasPrefix("{") || text.hasPrefix("<") ? "" : text
  }

  private func upload(
    _ item: (url: URL, path: String, size: UInt64), index: Int, token: String, session: String,
    to target: LocalSendTarget, progress: TransferProgress,
    pool: NIOLockedValueBox<[LocalSendConnection]>
  ) async -> (Int, String?) {
    let path =
      "\(LocalSendProtocol.Path.upload)?sessionId=\(Self.escaped(session))"
      + "&fileId=f\(index)&token=\(Self.escaped(token))"
    let moved = Atomic<UInt64>(0)
    // A kept connection the device closed just as it was taken fails before any byte: the
    // file then goes once more, on a new connection.
    for attempt in 0..<2 {
      let reused = attempt == 0 ? Self.take(from: pool) : nil
      let connection: LocalSendConnection
      if let reused {
        connection = reused
      } else {
        do {
          connection = try await client.connect(
            host: target.host, port: target.port, expecting: target.fingerprint,
            plainHTTP: target.plainHTTP)
        } catch {
          return (0, error.description)
        }
        connections.withLock { $0[ObjectIdentifier(connection)] = connection }
      }
      if cancelled.load(ordering: .relaxed) { connection.close() }
      do {
        let (answer, reusable) = try await connection.exchange(
          .POST, path: path,
          body: .file(item.url, size: item.size) { count in
            let total = moved.add(UInt64(count), ordering: .relaxed).newValue
            progress.advance(index, to: total)
          }, answerTimeout: Self.uploadAnswerTimeout)
        if reusable {
          pool.withLockedValue { $0.append(connection) }
        } else {
          forget(connection)
        }
        let words = Self.words(of: answer.body)
        return (Int(answer.status.code), answer.status.code == 200 ? nil : words)
      } catch {
        forget(connection)
        if reused != nil, moved.load(ordering: .relaxed) == 0,
          !cancelled.load(ordering: .relaxed)
        {
          continue
        }
        return (0, error.description)
      }
    }
    return (0, "the device closed the connection")
  }

  /// How long a device may take to answer an upload once its body is sent (it verifies and
  /// places the file first: a large one's flush to disk takes a while).
  static let uploadAnswerTimeout: Duration = .seconds(120)

  /// A kept connection still open, if the pool has one.
  private static func take(from pool: NIOLockedValueBox<[LocalSendConnection]>)
    -> LocalSendConnection?
  {
    pool.withLockedValue { pool -> LocalSendConnection? in
      while let last = pool.popLast() {
        if last.channel.isActive { return last }
        last.close()
      }
      return nil
    }
  }

  /// Closes `connection` and stops tracking it.
  private func forget(_ connection: LocalSendConnection) {
    connection.close()
    connections.withLock { $0[ObjectIdentifier(connection)] = nil }
  }

  // MARK: Files

  /// Every file's SHA-256 (the protocol wants them before anything is sent), as many at once
  /// as there are processors.
  ///
  /// - Throws: ``LocalSendSendError/unreadable(_:)`` for the first file that cannot be read.
  static func digests(of urls: [URL]) async throws(LocalSendSendError) -> [String] {
    let workers = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 4))
    let next = NIOLockedValueBox(0)
    let found = NIOLockedValueBox([String?](repeating: nil, count: urls.count))
    let failure = NIOLockedValueBox<String?>(nil)
    await withTaskGroup(of: Void.self) { group in
      for _ in 0..<workers {
        group.addTask {
          while failure.withLockedValue({ $0 == nil }) {
            let index = next.withLockedValue { next -> Int? in
              guard next < urls.count else { return nil }
              defer { next += 1 }
              return next
            }
            guard let index else { return }
            do {
              let digest = try await Self.sha256(of: urls[index])
              found.withLockedValue { $0[index] = digest }
            } catch {
              failure.withLockedValue { $0 = $0 ?? "\(urls[index].path): \(error)" }
            }
          }
        }
      }
    }
    if let failure = failure.withLockedValue({ $0 }) { throw .unreadable(failure) }
    return found.withLockedValue { $0.map { $0 ?? "" } }
  }

  /// A file's SHA-256, lower-case hex, read off the calling task's thread.
  static func sha256(of url: URL) async throws -> String {
    try await NIOThreadPool.singleton.runIfActive {
      let fd = open(url.path, O_RDONLY | O_CLOEXEC)
      guard fd >= 0 else { throw LocalSendSendError.unreadable(String(cString: strerror(errno))) }
      defer { close(fd) }
      var hasher = SHA256()
      // A buffer the file's size (and one byte to see its end), at most a MiB: a MiB zeroed
      // for each small file cost more than hashing it.
      var status = stat()
      let size = fstat(fd, &status) == 0 ? Int64(status.st_size) : 1 << 20
      var buffer = [UInt8](repeating: 0, count: size < 1 << 20 ? max(4096, Int(size) + 1) : 1 << 20)
      while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count >= 0 else {
          throw LocalSendSendError.unreadable(String(cString: strerror(errno)))
        }
        if count == 0 { break }
        buffer.withUnsafeBytes {
          hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0.prefix(count)))
        }
      }
      return hex(hasher.finalize())
    }
  }

  static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
    digest.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
  }

  /// A query value with everything but unreserved characters percent-encoded.
  static func escaped(_ value: String) -> String {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
  }

  private static func metadata(_ url: URL) -> LocalSendFile.Metadata? {
    var status = stat()
    guard stat(url.path, &status) == 0 else { return nil }
    return LocalSendFile.Metadata(
      modified: LocalSendTime.string(status.st_mtim),
      accessed: LocalSendTime.string(status.st_atim))
  }

  /// A MIME type from the name's extension (what LocalSend shows); octet-stream otherwise.
  static func mimeType(_ path: String) -> String {
    let name = path.split(separator: "/").last.map(String.init) ?? path
    guard let dot = name.lastIndex(of: ".") else { return "application/octet-stream" }
    switch name[name.index(after: dot)...].lowercased() {
    case "jpg", "jpeg": return "image/jpeg"
    case "png": return "image/png"
    case "gif": return "image/gif"
    case "heic": return "image/heic"
    case "webp": return "image/webp"
    case "mp4": return "video/mp4"
    case "mov": return "video/quicktime"
    case "mp3": return "audio/mpeg"
    case "pdf": return "application/pdf"
    case "zip": return "application/zip"
    case "txt", "md", "log": return "text/plain"
    case "json": return "application/json"
    case "html", "htm": return "text/html"
    case "apk": return "application/vnd.android.package-archive"
    default: return "application/octet-stream"
    }
  }
}
