/// Everything about one file (or empty folder) of an incoming offer, in one record: what was
/// offered, where it goes, its staging name, what the receiver decided for it, the space it is
/// promised and where it stands. ``IncomingOfferStateMachine`` keeps one per file, in the
/// offer's order.
struct FileSlot: Sendable {
  /// How the receiver answered for the file in OFFER_ACCEPT.
  enum Plan: Hashable, Sendable {
    /// Not decided yet.
    case pending
    /// Left out (``FileStart/skip``): received before under the same consent, or the
    /// skip policy and a file of this sender's own at its name.
    case skip
    /// Sent from `offset` (bytes staged by an earlier attempt).
    case receive(offset: UInt64)
    /// The destination holds this sender's copy at `copy` with the offered size and time: its
    /// digest comes first, the file itself only if the content differs.
    case held(copy: RelativePath)
  }

  /// A held file's two digests, compared once both are known.
  struct Comparison: Hashable, Sendable {
    /// This side's digest of its own copy (empty when it could not be read: it differs).
    var own: [UInt8]?
    /// The sender's digest, from its digest-first FILE_END.
    var theirs: [UInt8]?
  }

  /// Where the file stands once the offer is accepted.
  enum Stage: Hashable, Sendable {
    /// Expected: nothing of it arrived yet.
    case waiting
    /// A held file whose digests are being compared (either may have come).
    case comparing(Comparison)
    /// Its staged file is open and its bytes arrive.
    case open
    /// It ended and is landing: its staged file being settled against its digest and placed
    /// (beside the offer's order), or its empty folder made.
    case landing
    /// Settled, one way or another: acknowledged (or about to be).
    case done
  }

  /// The file as offered.
  let offered: TransferFile
  /// Its path, checked (byte by byte) to stay under the destination.
  let path: RelativePath
  /// Its staging file's name (empty until claimed).
  var name = ""
  /// Whether this offer holds the claim on ``name`` (the only names it may release).
  var claimed = false
  /// Staged under a name of its own, from nothing (its usual name was held by another offer,
  /// or it is streamed).
  var fresh = false
  /// What the receiver decided for it.
  var plan = Plan.pending
  /// Bytes of free space promised to it and not yet written.
  var promised: UInt64 = 0
  /// Whether its space was reserved: a held file's is only once it is asked for whole.
  var reserved = false
  /// Where it stands.
  var stage = Stage.waiting
  /// Bytes of its staging file so far, once open (its resume offset, then what was written).
  var position: UInt64 = 0
  /// For a streamed file: where the space reserved ahead of its bytes ends.
  var reservedUpTo: UInt64 = 0

  /// Whether it still waits for anything from the sender (not settled).
  var isPending: Bool { stage != .done }

  /// Whether it ended and is landing: nothing more may come for it.
  var isLanding: Bool {
    if case .landing = stage { return true }
    return false
  }

  /// Whether it is a held file whose digest-first FILE_END has come.
  var digestCame: Bool {
    if case .comparing(let comparison) = stage { return comparison.theirs != nil }
    return false
  }
}
