import Dispatch
import Ferry
import NIOCore
import NIOHTTP1
import Synchronization

/// One LocalSend upload session as the transfer core's front end: the core's words for the
/// sender become HTTP answers — the accept is the prepare-upload's 200 and its tokens, a file's
/// verdict its upload's status, a refusal the prepare-upload's 403 — and the bytes it has
/// written pace how fast the upload connections are read. A file the core holds (this
/// sender's copy already in the destination, with the offered size and time) is compared
/// first, by the SHA-256 the sender gave: the same content gets no token (the protocol lets a
/// receiver take a subset; none wanted at all is its 204) and is reported identical; other
/// content gets one, as does a file still being compared after ``comparisonLimit`` (the
/// sender waits for the answer). Any thread; the core calls it on the offer's executor.
final class UploadSession: IncomingOfferFrontEnd, @unchecked Sendable {
  /// How a prepare-upload ends.
  enum Preparation: Sendable {
    /// Accepted: a token for each file the receiver wants (by file id).
    case accepted([String: UploadSessionMachine.Upload])
    /// A text message, shown (204) or declined (403).
    case text(Bool)
    /// Refused or declined: the status and words for the sender.
    case refused(HTTPResponseStatus, String)
  }

  /// A file's verdict, as its upload's answer.
  enum Verdict: Sendable {
    case stored
    case corrupt(String)
    case failed(String)

    var status: HTTPResponseStatus {
      switch self {
      case .stored: return .ok
      case .corrupt: return .unprocessableEntity
      case .failed: return .internalServerError
      }
    }
  }

  /// Bytes handed to the core and not yet written before upload connections stop being read.
  static let window = 8 << 20
  /// How long the answer waits for held files to be compared (hashing this side's copies):
  /// the rest are asked for whole. The sender's own limit for the answer (LocalSend's, and
  /// `ferry send`'s 130 s) already counts the person's decision.
  static let comparisonLimit: Duration = .seconds(20)
  /// How long after its prepare-upload arrived the answer goes at the latest, comparisons done
  /// or not: within `ferry send`'s wait for it, whenever the person said yes.
  static let answerLimit: Duration = LocalSendUpload.decisionTimeout - .seconds(5)

  /// When the prepare-upload arrived (the session is made for it).
  private let arrived = ContinuousClock.now

  let id: String
  /// Every file offered, in the core's order, with its id.
  let files: [(id: String, file: LocalSendFile)]
  private let prepared: EventLoopPromise<Preparation>
  private let state = Mutex(State())
  /// Set once the core's offer exists (the session is created first).
  private let offerSlot = Mutex<IncomingOffer?>(nil)
  /// Whether it is still the server's session under way (``UploadSessionMachine``, the one
  /// record of it).
  private let isCurrent: @Sendable () -> Bool
  /// Ends it in the server's machine (the next one may start): whether it was still current.
  private let onEnd: @Sendable () -> Bool

  private struct State {
    var verdicts: [Int: EventLoopPromise<Verdict>] = [:]
    var outstanding = 0
    var waiting: [@Sendable () -> Void] = []
    /// Connections to close if the receiver cancels.
    var connections: [ObjectIdentifier: any Channel] = [:]
    /// Before the prepare-upload is answered: the tokens so far, and the held files whose
    /// comparison it waits for.
    var comparing: (uploads: [String: UploadSessionMachine.Upload], held: Set<Int>)?
  }

  init(
    id: String, files: [(id: String, file: LocalSendFile)], prepared: EventLoopPromise<Preparation>,
    isCurrent: @escaping @Sendable () -> Bool, onEnd: @escaping @Sendable () -> Bool
  ) {
    self.id = id
    self.files = files
    self.prepared = prepared
    self.isCurrent = isCurrent
    self.onEnd = onEnd
  }

  /// The core's offer, once it is made.
  var offer: IncomingOffer? {
    get { offerSlot.withLock { $0 } }
    set { offerSlot.withLock { $0 = newValue } }
  }

  // MARK: What the upload connections do

  /// An upload of file `index` starts on `channel`: its verdict completes `promise`.
  func uploadStarted(
    _ index: Int, on channel: any Channel, verdict promise: EventLoopPromise<Verdict>
  ) {
    // Stored, then checked: whoever takes the promise out (this, or the session's end) completes
    // it, once.
    state.withLock { state in
      state.verdicts[index] = promise
      state.connections[ObjectIdentifier(channel)] = channel
    }
    guard !isCurrent() else { return }
    let orphan = state.withLock { $0.verdicts.removeValue(forKey: index) }
    orphan?.succeed(.failed("the session is over"))
  }

  /// The upload connection `channel` is done with.
  func connectionEnded(_ channel: any Channel) {
    _ = state.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(channel)) }
  }

  /// `count` more bytes were handed to the core. Returns whether the connection may read on
  /// now; if not, `resume` is called once the core has written enough (on any thread).
  func handed(_ count: Int, resume: @escaping @Sendable () -> Void) -> Bool {
    let pauses = state.withLock { state in
      state.outstanding += count
      return state.outstanding > Self.window
    }
    // An ended session pauses nobody: its uploads are answered.
    guard pauses, isCurrent() else { return true }
    return state.withLock { state in
      // Granted meanwhile: no pause.
      guard state.outstanding > Self.window else { return true }
      state.waiting.append(resume)
      return false
    }
  }

  // MARK: IncomingOfferFrontEnd (on the offer's executor)

  func accept(_ starts: [FileStart]) {
    var uploads: [String: UploadSessionMachine.Upload] = [:]
    var compared: [(index: Int, digest: [UInt8])] = []
    for (index, start) in starts.enumerated() {
      switch start {
      case .skip:
        continue
      case .held:
        // A held file with the sender's digest is compared before it is asked for; one
        // without is asked for whole (the core takes it so).
        if let digest = try? files[index].file.digest() {
          compared.append((index, digest))
        } else {
          uploads[files[index].id] = upload(index)
        }
      case .from:
        uploads[files[index].id] = upload(index)
      }
    }
    guard !compared.isEmpty, let offer else { return prepared.succeed(.accepted(uploads)) }
    state.withLock { $0.comparing = (uploads, Set(compared.map(\.index))) }
    // As the Ferry wire's digest-first file end: the core hashes its copy and answers each.
    for file in compared { offer.fileEnded(file.index, digest: file.digest) }
    // What is not compared in time is asked for whole: the core answers each `differs`.
    let wait = min(Self.comparisonLimit, arrived + Self.answerLimit - .now)
    Task { [weak self] in
      try? await Task.sleep(for: wait)
      guard let self, let offer = self.offer else { return }
      let left = self.state.withLock { $0.comparing?.held ?? [] }
      offer.stopComparing(left)
    }
  }

  func acknowledge(_ acks: [FileAck]) {
    for ack in acks where !compared(ack) { settle(ack) }
  }

  func grant(_ bytes: Int) {
    let resumed = state.withLock { state -> [@Sendable () -> Void] in
      state.outstanding = max(0, state.outstanding - bytes)
      guard state.outstanding <= Self.window else { return [] }
      defer { state.waiting = [] }
      return state.waiting
    }
    for resume in resumed { resume() }
  }

  func reset(reason: String, cause: OfferEnd) {
    // Before the accept: the prepare-upload's answer. After it: the uploads waiting fail.
    let status: HTTPResponseStatus
    switch cause {
    case .declined: status = .forbidden
    case .refused(.insufficientSpace): status = .insufficientStorage
    case .refused(.tooManyFiles), .refused(.tooLarge): status = .payloadTooLarge
    case .refused(.unsafePath): status = .badRequest
    case .refused: status = .internalServerError
    case .stopped: status = .internalServerError
    }
    prepared.succeed(.refused(status, reason))
    end(failing: reason)
  }

  func cancel(reason: String) {
    prepared.succeed(.refused(.forbidden, reason))
    let connections = end(failing: reason)
    // The sender learns of it on the connections it uploads over.
    for channel in connections { channel.close(promise: nil) }
  }

  func close(after acks: [FileAck], then: @escaping @Sendable () -> Void) {
    for ack in acks where !compared(ack) { settle(ack) }
    // Closed before it was answered (the sender cancelled while it was asked about): its
    // prepare-upload hears so (a promise already completed ignores this).
    prepared.succeed(.refused(.forbidden, "the session is over"))
    end(failing: "the session is over")
    then()
  }

  // MARK: Private

  /// File `index`'s upload: a fresh token, its size and the digest it was offered with.
  private func upload(_ index: Int) -> UploadSessionMachine.Upload {
    let file = files[index].file
    return UploadSessionMachine.Upload(
      index: index, token: Secrets.token(), size: file.size, digest: try? file.digest())
  }

  /// Takes `ack` if it is a held file's comparison the prepare-upload waits for: identical
  /// (or skipped) needs no upload, different content gets a token; the last one answers the
  /// prepare-upload. Returns whether it was one.
  private func compared(_ ack: FileAck) -> Bool {
    let answer = state.withLock { state -> (Bool, [String: UploadSessionMachine.Upload]?) in
      guard var comparing = state.comparing, comparing.held.remove(ack.index) != nil else {
        return (false, nil)
      }
      if ack.status == .differs { comparing.uploads[files[ack.index].id] = upload(ack.index) }
      state.comparing = comparing.held.isEmpty ? nil : comparing
      return (true, comparing.held.isEmpty ? comparing.uploads : nil)
    }
    if let uploads = answer.1 { prepared.succeed(.accepted(uploads)) }
    return answer.0
  }

  private func settle(_ ack: FileAck) {
    let promise = state.withLock { $0.verdicts.removeValue(forKey: ack.index) }
    let verdict: Verdict
    switch ack.status {
    case .stored, .skipped, .identical: verdict = .stored
    case .corrupt: verdict = .corrupt(ack.reason)
    case .failed, .differs: verdict = .failed(ack.reason)
    }
    promise?.succeed(verdict)
  }

  /// Ends the session: the server may start the next, the uploads still waiting fail with
  /// `reason`, paused connections resume (to be answered). Returns the upload connections
  /// open. Ending it again finds nothing more to end.
  @discardableResult
  private func end(failing reason: String) -> [any Channel] {
    _ = onEnd()
    let (verdicts, waiting, connections) = state.withLock {
      state -> ([EventLoopPromise<Verdict>], [@Sendable () -> Void], [any Channel]) in
      defer {
        state.verdicts = [:]
        state.waiting = []
        state.connections = [:]
      }
      return (Array(state.verdicts.values), state.waiting, Array(state.connections.values))
    }
    for promise in verdicts { promise.succeed(.failed(reason)) }
    for resume in waiting { resume() }
    // The offer and this session hold each other: let both go.
    offer = nil
    return connections
  }

}
