import Synchronization

/// Files a connected peer offers, waiting for this side's decision: what will be written if it
/// is accepted is exactly this list — these paths (already checked safe), these sizes — and
/// nothing else. Yielded by ``Session/resourceOffers`` once ``Session/askAboutResourceOffers()``
/// was called; answer with ``accept(_:)`` or ``decline(reason:)``.
///
/// An offer left unanswered for ``decisionTimeout``, or released without an answer, is declined,
/// so the sender never waits forever. Every method may be called from any thread.
public final class ResourceOffer: Sendable, CustomStringConvertible {
  /// How long an offer waits for a decision before it is declined.
  public static let decisionTimeout: Duration = .seconds(120)

  /// What the application decided.
  enum Decision: Sendable {
    case accept(ReceiveOptions)
    case decline(String)
  }

  /// This offer; the ``IncomingTransfer`` that receives it once accepted has the same.
  public let id: OfferID
  /// The sender.
  public let peer: PeerID
  /// The files offered: each path (relative to the destination, validated) and size in bytes.
  /// Empty folders to create are among them (size 0), named in ``folders``.
  public let files: [(path: String, size: UInt64)]
  /// The paths in ``files`` that are empty folders to create rather than files.
  public let folders: Set<String>
  /// The paths in ``files`` that are streamed: their size (0 in ``files``) is not known until
  /// they end, and accepting takes whatever they hold, as long as the destination has room.
  public let streamed: Set<String>
  /// The bytes of every file whose size is known, together.
  public let totalBytes: UInt64

  private let pending = Atomic<Bool>(true)
  private let decide: @Sendable (Decision) -> Void
  private let question: OpenQuestions.Question?

  /// - Parameter question: Counts this offer until the application answers or releases it.
  init(
    id: OfferID = .next(), peer: PeerID, files: [(path: String, size: UInt64)],
    folders: Set<String> = [], streamed: Set<String> = [],
    question: OpenQuestions.Question? = nil,
    decide: @escaping @Sendable (Decision) -> Void
  ) {
    self.id = id
    self.peer = peer
    self.files = files
    self.folders = folders
    self.streamed = streamed
    self.totalBytes = files.reduce(0) { $0 + $1.size }  // at most 2^62: checked when decoded
    self.question = question
    self.decide = decide
  }

  deinit {
    if pending.exchange(false, ordering: .acquiringAndReleasing) {
      decide(.decline("the receiving application did not answer"))
    }
    answered()
  }

  /// The application answered or let go: the offer stops counting against its link.
  private func answered() {
    question?.close()
  }

  /// Whether the offer still waits for an answer: false once accepted or declined, timed out,
  /// or withdrawn by the sender (it cancelled, or its link closed). A prompt can poll it to stop
  /// asking about an offer nobody is waiting on.
  public var isPending: Bool { pending.load(ordering: .acquiring) }

  /// `N files, SIZE from PEER` (`and N of unknown size` when some are streamed).
  public var description: String {
    "\(Quantity.count(files.count, "file")), \(Quantity.bytes(totalBytes))"
      + (streamed.isEmpty ? "" : " and \(streamed.count) of unknown size") + " from \(peer)"
  }

  /// Accepts: the files are received into `options.destination` as ``Session/resourceEvents``
  /// reports (an offer that no longer fits the free space is refused there, with
  /// ``ResourceEvent/offerRefused(peer:files:error:)``). Does nothing if no longer pending.
  public func accept(_ options: ReceiveOptions) {
    defer { answered() }
    guard pending.exchange(false, ordering: .acquiringAndReleasing) else { return }
    decide(.accept(options))
  }

  /// Declines; the sender's transfer fails with the reason (escaped on its side). Does nothing
  /// if no longer pending.
  public func decline(reason: String = "") {
    defer { answered() }
    guard pending.exchange(false, ordering: .acquiringAndReleasing) else { return }
    decide(.decline(reason))
  }

  /// The sender gave up or the decision timed out: the offer is no longer pending.
  func withdraw() {
    pending.store(false, ordering: .releasing)
  }
}
