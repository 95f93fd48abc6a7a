import Foundation

/// The data each state of the offer carries (``IncomingOfferStateMachine/State``).
extension IncomingOfferStateMachine {
  /// An offer whose paths are checked.
  struct Offer {
    var slots: [FileSlot]
  }

  /// An offer being prepared.
  struct Staging {
    var slots: [FileSlot]
    let options: ReceiveOptions
    /// Files whose staging name another offer holds, waited for.
    var waiting: Set<Int> = []
    /// Bytes reserved for the offer (promised to its files) once ``reserved(_:for:)`` said so.
    var needed: UInt64 = 0
  }

  /// An accepted offer.
  struct Receiving {
    var slots: [FileSlot]
    let options: ReceiveOptions
    /// Files not settled yet.
    var remaining: Int
    /// Files whose staged file is open (their bytes arrive), in the order they opened.
    var open: [Int] = []
    /// Held files whose copy is still to be hashed here, and the one being hashed.
    var held: HeldComparisons
    /// The first file's failure: the offer's, if nothing else ends it.
    var firstFailure: TransferError?
    /// FILE_ACKs gathered and not sent.
    var acks = AckGathering()
    /// Credit earned by bytes written and not granted yet.
    var credit = 0
    /// When the sender last made progress, and the file data it sent since.
    var clock: StallClock
    /// What came for a file and waits for it to be opened, or for its space.
    var pendingData: Pending?
  }

  /// An accepted offer stopped while files were landing.
  struct Stopping {
    var slots: [FileSlot]
    /// Why it stopped: the offer's error once the last file landed.
    let error: TransferError
    /// The files still landing.
    var landing: Set<Int>
    /// The staging names of the files that were landing, given back at the end.
    let names: [String]
  }

  /// What came for a file and is not done with yet: it waits for the file's staging file to
  /// open (and, before that, for its space), or for room ahead of a streamed file.
  struct Pending: Sendable {
    let index: Int
    /// Bytes of data (0 for a hole), or of the hole.
    let count: UInt64
    let hole: Bool
    /// Credit the bytes earn once written (their frame's payload).
    let credit: Int
    /// Whether it is the file's end (no data then).
    var ends = false
    /// For an end: the digest it came with (nil: the sender gave none, and the bytes are taken
    /// as they came, their length checked).
    var digest: [UInt8]? = nil
  }
}
