import Foundation

/// Receiving one offer of files, as a pure value: its paths are checked, it is decided (at
/// once, or by the application), its staging names claimed (waiting a little for those another
/// offer of the same sender holds), what the destination already holds found out, its space
/// reserved; then each file's bytes and end are taken in the order the sender may send them,
/// held files compared, every file settled, placed and acknowledged, and the offer ends once
/// none is left — or early, for a decline, a refusal, a cancel, a lost link, a stall or a
/// protocol violation.
///
/// Protocol-neutral: a front end feeds it "these files are offered" (``start(_:)``), "bytes for
/// file N" (``data(_:bytes:hole:)``), "file N ends with digest D" (``fileEnded(_:digest:)``),
/// "the sender gave up" (``senderReset(reason:)``); what it answers — accept, acknowledge,
/// grant credit, reset — the front end says in its own protocol. The Ferry wire is the first
/// front end (``FerryOfferEndpoint``).
///
/// Like NIO's state machines: one `state`, each case carrying the data valid in it (one
/// ``FileSlot`` per file, no parallel collections); one `mutating func` per event, appending
/// the ``IncomingOfferAction``s to perform to the caller's buffer; no I/O, no clock (the time
/// comes with the events that need it), no locks. ``IncomingOffer`` performs the actions, on
/// the offer's executor, and feeds their results back. Unit-tested state × event
/// (IncomingOfferStateMachineTests) and driven by the state-machine fuzzer.
struct IncomingOfferStateMachine {
  typealias Action = IncomingOfferAction

  /// Where the offer is.
  enum State {
    /// Not started: its paths are not checked yet.
    case idle
    /// The application has the question.
    case deciding(Offer)
    /// Accepted by the application: its staging is being prepared (names claimed or waited
    /// for, the destination surveyed, space reserved).
    case staging(Staging)
    /// Accepted: files arrive.
    case receiving(Receiving)
    /// Stopped early while files were landing: nothing more is taken from the sender; each of
    /// them is reported as it lands, and the offer ends after the last.
    case stopping(Stopping)
    /// Over: nothing more happens.
    case ended
    /// Only while an event changes the state in place (no copy of the slots).
    case modifying
  }

  /// How long an offer waits for another offer of the same sender to let go of a staged file.
  static let claimWait: Duration = .seconds(5)
  /// The file data a sender must send for it to count as progress against the stall limit
  /// (64 KiB, about 8.7 kbit/s over a minute): a byte every 20 s is silence, not a transfer
  /// that goes on for weeks. A streamed file's bytes count as they come (its writer may be
  /// slow for good reason); every file that ends counts.
  static let progressBytes: UInt64 = 64 << 10
  /// How far ahead of a streamed file's data its space is reserved.
  static let streamStep: UInt64 = 64 << 20
  /// Credit is granted back per this many bytes written.
  static let creditStep = 1 << 20
  /// FILE_ACKs are sent in batches of this many at most.
  static let ackBatch = 256
  /// What the sender is told of a file that could not be stored: the receiving user sees why,
  /// the sender learns nothing of the files and folders already in the destination.
  static let notStored = "could not be stored (the receiving user is told why)"

  let offered: [TransferFile]
  let configuration: Configuration
  /// Where the offer is: changed only by the machine's own events (its extensions).
  var state = State.idle

  init(files: [TransferFile], configuration: Configuration) {
    self.offered = files
    self.configuration = configuration
  }

  /// The options the offer was accepted into, once it was.
  var options: ReceiveOptions? {
    switch state {
    case .staging(let staging): return staging.options
    case .receiving(let receiving): return receiving.options
    default: return nil
    }
  }

  /// The offer's slots, in whatever state holds them (none once it ended).
  var slots: [FileSlot] {
    switch state {
    case .deciding(let offer): return offer.slots
    case .staging(let staging): return staging.slots
    case .receiving(let receiving): return receiving.slots
    case .stopping(let stopping): return stopping.slots
    case .idle, .ended, .modifying: return []
    }
  }

  /// Whether the offer is over.
  var isEnded: Bool {
    if case .ended = state { return true }
    return false
  }

  /// Whether the offer is accepted and not over.
  var isReceiving: Bool {
    if case .receiving = state { return true }
    return false
  }
}
