import Crypto
import Ferry
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Sends files (or a text) to a LocalSend device: `prepare-upload` (with each file's size and
/// SHA-256, and this device's description), then each accepted file's `upload`, a few at once;
/// a cancel tells the device (`cancel`). Whole files only: the protocol cannot resume one.
public final class LocalSendUpload: Sendable {
  /// How long the device may take to answer the prepare-upload (a person decides).
  public static let decisionTimeout: Duration = .seconds(130)
  /// Uploads at once.
  public let parallel: Int

  let client: LocalSendClient
  let me: LocalSendDevice
  let session = Mutex<(id: String, target: LocalSendTarget)?>(nil)
  let cancelled = Atomic<Bool>(false)
  /// The last session whose uploads were cut off, until the device said it ended it.
  let cutSession = Mutex<(id: String, target: LocalSendTarget)?>(nil)
  /// The device a prepare-upload waits on (a person there decides), for ``cancel()``.
  let preparing = Mutex<LocalSendTarget?>(nil)
  /// The connections uploads are using or keeping, closed by ``cancel()``.
  let connections = Mutex<[ObjectIdentifier: LocalSendConnection]>([:])

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
    // What was not delivered yet: never sent (nil), or cut off (0). A file the device refused
    // (403, 422, 5xx) is not offered again: the person there saw it once.
    let offered = items.indices.filter { sent[$0].status == nil || sent[$0].status == 0 }
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
    let digests = try await digests(of: items)
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
      sha256: Hex.lowercase(SHA256.hash(data: bytes)), preview: text)
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
}
