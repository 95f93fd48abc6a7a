import Ferry
import FerryLocalSend

/// Who decides what a ``Receiver`` takes: at once, by a standing rule (``ReceivePolicy``:
/// `--yes`, `--accept-from`, trusted peers), and otherwise by asking someone (the terminal's
/// prompt, a daemon's API, a desktop notification). The receiver calls it; it never sees the
/// invitation or offer itself, so that nothing it does can accept more than the receiver's
/// consent budget allows (what was approved is written once, whatever path re-offers, resumes
/// or retries).
///
/// Both are called from the receiver's tasks, any thread, several at once (one per sender
/// asking).
public protocol ReceiveDecider: Sendable {
  /// Accepts or declines `sender` without asking anyone, or nil when someone must be asked
  /// (or, for a Ferry sender coming back, when the receiver may take it back within its
  /// resume grace). Cheap and synchronous: no I/O, no waiting.
  func standingAnswer(for sender: SenderFacts) -> StandingAnswer?

  /// Asks about `question` and returns the answer: yes, no, no answer by
  /// ``ConsentQuestion/deadline``, or ``ConsentAnswer/withdrawn`` when the question stopped
  /// being pending (``ConsentQuestion/isPending``) before it was answered. An answer after the
  /// deadline or after the question was withdrawn is not acted on.
  func decide(_ question: ConsentQuestion) async -> ConsentAnswer
}

/// What a standing rule decided about a sender.
public struct StandingAnswer: Sendable, Equatable {
  /// Whether the sender is accepted.
  public let accept: Bool
  /// The reason given to a sender declined (empty: the receiver's default words).
  public let reason: String

  /// An answer: accept, or decline with `reason`.
  public init(accept: Bool, reason: String = "") {
    (self.accept, self.reason) = (accept, reason)
  }
}

/// What a standing rule may know of a sender before it is asked about.
public struct SenderFacts: Sendable {
  /// Its name and key.
  public let peer: PeerID
  /// What this machine knows of that key (known, trusted, new, KEY CHANGED, look-alike).
  public let status: KnownPeers.Status
  /// Whether its certificate proved its key: always for a Ferry peer; a LocalSend sender
  /// without a certificate (`--localsend-unverified`) or a browser proves nothing.
  public let verified: Bool

  /// The facts of a sender.
  public init(peer: PeerID, status: KnownPeers.Status, verified: Bool) {
    (self.peer, self.status, self.verified) = (peer, status, verified)
  }
}

/// An answer to a ``ConsentQuestion``.
public enum ConsentAnswer: Sendable, Equatable {
  /// Accept.
  case yes
  /// Decline: the person said no.
  case no
  /// Nobody answered before the deadline: declined, saying so.
  case noAnswer
  /// The question stopped being pending before it was answered (its sender gave up, or the
  /// receiver is stopping).
  case withdrawn
}

/// One question a ``ReceiveDecider`` is asked: who asks, what it sends, until when.
public struct ConsentQuestion: Sendable {
  /// What is asked about.
  public enum Subject: Sendable {
    /// A Ferry sender's invitation: what it says it will send (nil: it did not say anything
    /// plausible) — files, or a text (``OfferSummary/text``, shown once accepted).
    case invitation(OfferSummary?)
    /// The real files of an offer from an accepted Ferry sender that its approval does not
    /// cover, and why not.
    case offer(OfferFacts, because: OfferReason)
    /// A LocalSend app's (or a browser's) files: it has no invitation before them.
    case localSendFiles(OfferFacts, from: LocalSendSender)
    /// A LocalSend app's text message, of `bytes` bytes.
    case localSendText(bytes: Int, from: LocalSendSender)
  }

  /// Why an offer from an accepted sender needs its own yes.
  public enum OfferReason: Sendable {
    /// The first offer, which is not what the invitation announced.
    case differsFrom(OfferSummary)
    /// The first offer, after an invitation that did not say what it would send.
    case unannounced
    /// A later offer on the same connection.
    case later
  }

  /// Who asks.
  public let sender: SenderFacts
  /// What it asks.
  public let subject: Subject
  /// The verification code both screens show (Ferry senders only).
  public let code: VerificationCode?
  /// When the question is answered "no answer" at the latest (early enough that the decline
  /// reaches the sender before its own timeout does).
  public let deadline: ContinuousClock.Instant
  /// Whether it comes from a sender already let in, or waits on an open connection (an
  /// offer, a LocalSend question): it goes ahead of invitations.
  public let urgent: Bool
  private let pending: @Sendable () -> Bool

  /// A question; `isPending` says whether it is still open.
  public init(
    sender: SenderFacts, subject: Subject, code: VerificationCode?,
    deadline: ContinuousClock.Instant, urgent: Bool, isPending: @escaping @Sendable () -> Bool
  ) {
    (self.sender, self.subject, self.code, self.deadline, self.urgent) = (
      sender, subject, code, deadline, urgent
    )
    pending = isPending
  }

  /// Whether it is still open: its sender has not given up, and nobody answered it yet.
  public var isPending: Bool { pending() }
}
