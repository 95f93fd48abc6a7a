import Foundation

/// Sending one offer, as a pure value: what the receiver answered (OFFER_ACCEPT, each
/// FILE_ACK), what this side sent of each file, and what comes next — the held files' digests
/// first, the files in order, then the held files the receiver asks for whole — until every
/// file has its verdict, or the offer fails. Every answer is checked against what the protocol
/// allows (an answer out of turn is the receiver's violation). One ``SendSlot`` per file, in
/// the state that owns them; no I/O, no clock, no lock: ``OutgoingOffer`` reads and sends the
/// files, holds the waiting tasks, and keeps this under its lock (answers arrive on the event
/// loop, the sending task runs elsewhere). Unit-tested state × event
/// (OutgoingOfferStateMachineTests).
struct OutgoingOfferStateMachine {
  /// One file of the offer, as this side knows it.
  struct SendSlot: Sendable {
    let file: TransferFile
    /// Where the receiver said it starts (left out, from an offset, or held); nil before the
    /// answer.
    var start: FileStart?
    /// Whether the receiver holds it (its digest goes first).
    var held: Bool { start == .held }
    /// Whether the receiver asked for it whole (a held file, once at most).
    var askedWhole = false
    /// Its digest, once computed (sent in its FILE_END).
    var digest: [UInt8]?
    /// How long hashing it took here, for a held file whose digest went first: about as long
    /// as the receiver takes to hash its own copy.
    var hashTime: Duration?
    /// The bytes of it this attempt sent.
    var sent: Range<UInt64>?
    /// The receiver's verdict.
    var result: FileResult?
  }

  /// Where the offer is.
  enum State: Sendable {
    /// The OFFER is on its way; no answer yet.
    case offered([SendSlot])
    /// Accepted: files go out and verdicts come back.
    case sending(Sending)
    /// Over with this failure (the first one: what came after is its echo).
    case failed(TransferError, [SendSlot])
    /// Only while an event changes the state in place.
    case modifying
  }

  /// An accepted offer.
  struct Sending: Sendable {
    var slots: [SendSlot]
    /// Held files the receiver asked for whole and the sending task has not taken yet.
    var resend: [Int] = []
    /// Files with a verdict.
    var answered = 0
  }

  /// What a FILE_ACK came to.
  enum Acknowledgement: Equatable, Sendable {
    /// The file has its verdict (`final`: complete its progress).
    case verdict(index: Int)
    /// A held file is to be sent whole.
    case askedWhole(index: Int)
    /// Not allowed now: the receiver breaks the protocol.
    case violation(String)
  }

  /// What the sending task does after the files it had to send.
  enum Next: Equatable, Sendable {
    /// Send these held files whole.
    case resend([Int])
    /// Every file has its verdict.
    case done
    /// Wait for more verdicts.
    case wait
    /// Give up: the offer failed.
    case failed(TransferError)
  }

  /// The digest the offer uses (SHA-256 with a peer older than version 3).
  private(set) var checksum = ChecksumAlgorithm.sha256
  /// Whether the receiver takes HOLE frames (version 3).
  private(set) var holes = false
  /// The channel the offer went out on, once it did.
  private(set) var channel: UInt32?
  /// Whether the application cancelled (possibly before the offer went out).
  private(set) var cancelled = false
  /// What the receiver is told when this side fails: only paths relative to the offer.
  var reasonForPeer: String?
  private(set) var state: State

  init(files: [TransferFile]) {
    state = .offered(files.map { SendSlot(file: $0) })
  }

  /// The slots, in whatever state holds them.
  var slots: [SendSlot] {
    switch state {
    case .offered(let slots), .failed(_, let slots): return slots
    case .sending(let sending): return sending.slots
    case .modifying: return []
    }
  }

  /// The offer's failure, once it failed.
  var failure: TransferError? {
    if case .failed(let error, _) = state { return error }
    return nil
  }

  /// Where the receiver said each file starts, once it accepted the offer.
  var starts: [FileStart]? {
    guard isAccepted else { return nil }
    return slots.map { $0.start ?? .skip }
  }

  /// Whether the receiver accepted the offer.
  var isAccepted: Bool {
    if case .sending = state { return true }
    if case .failed(_, let slots) = state { return slots.first?.start != nil }
    return false
  }

  /// The OFFER went out on `channel`, with this digest and whether holes go as HOLEs. Returns
  /// whether the application cancelled before.
  mutating func opened(channel: UInt32, checksum: ChecksumAlgorithm, holes: Bool) -> Bool {
    self.channel = channel
    self.checksum = checksum
    self.holes = holes
    return cancelled
  }

  /// The application cancels; returns the channel, if the offer went out.
  mutating func cancel() -> UInt32? {
    cancelled = true
    return channel
  }

  /// Records `error` as the offer's failure; false when it had failed already (this is an echo).
  mutating func fail(_ error: TransferError) -> Bool {
    switch state {
    case .failed, .modifying: return false
    case .offered(let slots): state = .failed(error, slots)
    case .sending(let sending): state = .failed(error, sending.slots)
    }
    return true
  }

  // MARK: The receiver's answers

  /// OFFER_ACCEPT: where each file starts — left out, from a resume offset within its size, or
  /// held (not a folder, not streamed); once. Files left out get their verdict (`skipped`) at
  /// once.
  ///
  /// - Returns: The starts, or why the answer breaks the protocol (nil: the offer failed
  ///   already, the answer is ignored).
  mutating func accepted(_ starts: [FileStart]) -> Result<[FileStart], Violation>? {
    guard case .offered(var slots) = state else {
      if case .sending = state {
        return .failure(Violation("the receiver accepted the offer twice"))
      }
      return nil
    }
    guard starts.count == slots.count,
      zip(starts, slots).allSatisfy({ start, slot in
        switch start {
        case .skip: return true
        case .from(let offset): return offset <= slot.file.size
        case .held: return !slot.file.isFolder && !slot.file.isStreamed
        }
      })
    else { return .failure(Violation("the receiver answered the offer wrongly")) }
    state = .modifying
    var answered = 0
    for index in slots.indices {
      slots[index].start = starts[index]
      if starts[index] == .skip {
        slots[index].result = FileResult(
          path: slots[index].file.path, status: .skipped, reason: "", digest: [],
          checksum: checksum)
        answered += 1
      }
    }
    state = .sending(Sending(slots: slots, answered: answered))
    return .success(starts)
  }

  /// A FILE_ACK for file `index`: only after the offer was accepted, once per file, never for
  /// one left out; `differs` only for a held file, once; `identical` only for a held file
  /// whose digest was sent.
  mutating func acknowledged(
    _ index: Int, _ status: FileVerdict, reason: String
  ) -> Acknowledgement? {
    guard case .sending(var sending) = state else {
      if case .failed = state { return nil }
      return .violation("the receiver acknowledged file \(index) out of turn")
    }
    let outOfTurn = Acknowledgement.violation("the receiver acknowledged file \(index) out of turn")
    guard sending.slots.indices.contains(index), let start = sending.slots[index].start,
      start != .skip, sending.slots[index].result == nil
    else { return outOfTurn }
    let slot = sending.slots[index]
    if status == .identical, !slot.held || slot.digest == nil { return outOfTurn }
    state = .modifying
    defer { state = .sending(sending) }
    guard let verdict = FileStatus(status) else {
      // "Send it whole": a held file, once.
      guard slot.held, !slot.askedWhole else { return outOfTurn }
      sending.slots[index].askedWhole = true
      sending.resend.append(index)
      return .askedWhole(index: index)
    }
    sending.slots[index].result = FileResult(
      path: slot.file.path, status: verdict, reason: reason, digest: slot.digest ?? [],
      checksum: checksum)
    sending.answered += 1
    return .verdict(index: index)
  }

  /// What the sending task does next, once it sent what it had to.
  mutating func next() -> Next {
    switch state {
    case .failed(let error, _): return .failed(error)
    case .offered, .modifying: return .wait
    case .sending(var sending):
      if !sending.resend.isEmpty {
        let resend = sending.resend
        state = .modifying
        sending.resend = []
        state = .sending(sending)
        return .resend(resend)
      }
      return sending.answered == sending.slots.count ? .done : .wait
    }
  }

  // MARK: What this side sent

  /// File `index`'s digest was computed (and goes in its FILE_END); `took`: how long hashing a
  /// held file took here.
  mutating func computed(_ index: Int, digest: [UInt8], took: Duration? = nil) {
    update(index) {
      $0.digest = digest
      if let took { $0.hashTime = took }
    }
  }

  /// This attempt sent `range` of file `index`.
  mutating func sent(_ index: Int, _ range: Range<UInt64>) {
    update(index) { $0.sent = range }
  }

  /// How long this side may wait for a receiver that shows no progress beyond `stall`: before
  /// the answer, the receiver's decision too; while held files whose digest was sent wait for
  /// their verdict, as long again as this side took to hash them (the receiver hashes its own
  /// copies meanwhile) — bounded by this side's own work, never by what the receiver claims.
  func patience(stall: Duration, decision: Duration) -> Duration {
    let comparing = slots.reduce(Duration.zero) { total, slot in
      slot.result == nil && !slot.askedWhole ? total + (slot.hashTime ?? .zero) : total
    }
    return (isAccepted ? stall : decision + stall) + comparing
  }

  private mutating func update(_ index: Int, _ change: (inout SendSlot) -> Void) {
    switch state {
    case .offered(var slots):
      state = .modifying
      change(&slots[index])
      state = .offered(slots)
    case .sending(var sending):
      state = .modifying
      change(&sending.slots[index])
      state = .sending(sending)
    case .failed(let error, var slots):
      state = .modifying
      change(&slots[index])
      state = .failed(error, slots)
    case .modifying:
      break
    }
  }

  /// Why an answer breaks the protocol.
  struct Violation: Error, Equatable, Sendable {
    let reason: String
    init(_ reason: String) { self.reason = reason }
  }
}
