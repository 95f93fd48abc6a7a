import Ferry
import FerryLocalSend
import Foundation

/// Who sends to a ``Receiver``: a Ferry peer, whose key its TLS certificate proved, or a
/// LocalSend device or browser (verified or not: ``LocalSendSender/verified``).
public enum IncomingSender: Sendable, CustomStringConvertible {
  /// A Ferry peer.
  case ferry(PeerID)
  /// A LocalSend app, or a browser on the web page.
  case localSend(LocalSendSender)

  /// Its name and key (for a LocalSend sender that proved none, a key nobody can hold).
  public var peer: PeerID {
    switch self {
    case .ferry(let peer): return peer
    case .localSend(let sender): return sender.peer
    }
  }

  /// Whether its certificate proved its key (always, for a Ferry peer).
  public var verified: Bool {
    switch self {
    case .ferry: return true
    case .localSend(let sender): return sender.verified
    }
  }

  /// As people read it: its name, short fingerprint and (for LocalSend) device and address.
  public var description: String {
    switch self {
    case .ferry(let peer): return peer.description
    case .localSend(let sender): return sender.description
    }
  }
}

/// What a ``Receiver`` reports, in order, on its one stream (``Receiver/events``): what it
/// was asked and what was decided, what arrives and how each offer ends, what its front ends
/// meet, and — for a receiver that ends (``Receiver/Configuration/once``, a web link's end) —
/// its outcome. Progress is not here: each ``IncomingTransfer`` has its own.
public enum ReceiverEvent: Sendable {
  // MARK: Consent

  /// A Ferry sender's invitation, before anything is decided: what it says it sends (nil:
  /// nothing plausible).
  case invitation(Invitation, summary: OfferSummary?)
  /// A LocalSend sender (or a browser) asks to send `offer`'s files, or (`offer` nil) a text.
  case localSendAsked(LocalSendSender, status: KnownPeers.Status, offer: OfferFacts?)
  /// The sender gave up waiting before it could be asked about (its question waited behind
  /// another one).
  case gaveUpBeforeAsked(PeerID)
  /// A sender whose key changed, or whose name looks like a trusted one, was decided without
  /// anyone being asked: the loud warning is owed now.
  case suspicious(PeerID, status: KnownPeers.Status)
  /// A sender whose link was lost is back for the batch accepted before (`files` announced),
  /// and is taken back without asking (within the resume grace).
  case resuming(PeerID, files: Int?)
  /// The sender withdrew what it asked while it was asked about.
  case withdrawn(PeerID)
  /// An invitation (or, `text`, a LocalSend text) was declined, with the reason the sender
  /// was given.
  case declined(IncomingSender, reason: String, text: Bool)
  /// A sender was let in (`resumed`: taken back without asking); `code`: the verification
  /// code both screens show (Ferry only).
  case accepted(IncomingSender, code: VerificationCode?, resumed: Bool)
  /// Accepting an invitation failed (its link went away meanwhile).
  case acceptFailed(PeerID, InvitationError)
  /// An accepted sender's text.
  case text(PeerID, String)
  /// An offer was declined: its files, its bytes, the reason its sender was given.
  case offerDeclined(PeerID, reason: String, files: Int, bytes: UInt64)

  // MARK: Transfers

  /// An accepted offer started arriving; `batch`: when it is a part of a larger batch, that
  /// batch and what its parts before this one added up to (for one progress total).
  case transferStarted(IncomingTransfer, batch: BatchPosition?)
  /// One file settled, refused, or staging cleaned: the library's own event, as it came
  /// (``ResourceEvent/finished(_:peer:result:digest:)``, `identical`, `staleStagingRemoved`,
  /// `offerRefused`). A file's failure after ``Receiver/stop()`` is not reported: its transfer
  /// is reported whole (``interrupted(_:)``).
  case resource(ResourceEvent)
  /// An accepted offer ended (`error` nil: every file settled).
  case transferEnded(IncomingTransfer, error: TransferError?)
  /// `--once`: the one offer's sender lost its link; it is waited for this long.
  case awaitingResume(PeerID, grace: Duration)
  /// A transfer cut short by ``Receiver/stop()``.
  case interrupted(IncomingTransfer)

  // MARK: Front ends

  /// The Ferry listener is advertised as `name` (`discoverable` false: avahi-daemon is not
  /// there, and senders need the address).
  case advertising(name: String, discoverable: Bool)
  /// avahi-daemon is unavailable: the listener is not advertised (but reachable by address);
  /// it is advertised as soon as the daemon answers (``advertisedLate(name:)``).
  case discoveryUnavailable(reason: String)
  /// avahi-daemon came up after all: advertised as `name`.
  case advertisedLate(name: String)
  /// The name was taken on the network: advertised under another.
  case renamed(from: String, to: String)
  /// avahi-daemon went away; the advertiser publishes again when it returns.
  case discoveryInterrupted(reason: String)
  /// Advertising failed for good; senders can still connect by address.
  case discoveryFailed(DiscoveryError)
  /// A LocalSend sender was turned away in its TLS handshake (once per address and reason in
  /// 10 minutes): `alias` as its address announced it, `message` what it means and what lets
  /// such senders in.
  case senderRefused(LocalSendRefusal, alias: String?, message: String)
  /// A web receive's link expired, and the session it had accepted has ended.
  case linkExpired
  /// A LocalSend device announced itself (or answered this machine's announcement): not
  /// proof of who it is (``LocalSendSighting/proven``), but a moment to deliver to it.
  case localSendSeen(LocalSendSighting)

  // MARK: End

  /// How a receiver that ends ended (``Receiver/Configuration/once``, a web link's end); the
  /// last event but for what its ending reports.
  case outcome(ReceiveOutcome)
}

/// What a LocalSend (or web) offer holds, as its question and events show it.
public struct OfferFacts: Sendable {
  /// Its files, in order, with their sizes (empty folders among them).
  public let files: [(path: String, size: UInt64)]
  /// Those of its paths that are empty folders.
  public let folders: Set<String>
  /// Those of its files that are streamed (of unknown size).
  public let streamed: Set<String>
  /// The bytes of its files of known size.
  public let totalBytes: UInt64

  /// The facts of `offer`.
  public init(_ offer: ResourceOffer) {
    (files, folders, streamed, totalBytes) = (
      offer.files, offer.folders, offer.streamed, offer.totalBytes
    )
  }
}

/// Where one offer stands in the batch its sender announced.
public struct BatchPosition: Sendable {
  /// The batch.
  public let summary: OfferSummary
  /// What its parts before this one added up to.
  public let before: OfferSummary.Tally

  /// A position: after `before`, in `summary`.
  public init(summary: OfferSummary, before: OfferSummary.Tally) {
    (self.summary, self.before) = (summary, before)
  }
}

/// How a receiver that ends (``Receiver/Configuration/once``, or a web link's end) ended.
public enum ReceiveOutcome: Sendable {
  /// The one offer arrived, every file stored, skipped or identical; `transfer` nil for a
  /// text, or a web link that expired.
  case received(IncomingTransfer?)
  /// The one offer ended with files not received, for `error`.
  case transferFailed(PeerID, TransferError)
  /// The one offer was refused before anything was written, for `error`.
  case refused(PeerID, TransferError)
  /// The invitation of a sender the policy accepts was declined for want of room (`reason`):
  /// the one offer, refused.
  case refusedForSpace(PeerID, reason: String)
  /// The one offer was declined (by the person, or for want of an answer).
  case declined(PeerID, reason: String)
  /// Its sender withdrew the one offer before it was accepted.
  case withdrawn(PeerID)
  /// The one offer was accepted, but its sender went away before it began.
  case neverStarted(PeerID)
  /// The one offer's sender came back but did not resume it.
  case didNotResume(PeerID)
  /// The one offer was a part of a larger batch whose next part never came.
  case incompleteBatch(PeerID)
  /// The one offer was a text that could not be accepted.
  case acceptFailed(PeerID, InvitationError)
}
