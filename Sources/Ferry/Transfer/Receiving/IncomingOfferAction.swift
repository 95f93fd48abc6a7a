import Foundation

/// What ``IncomingOfferStateMachine`` asks its driver (``IncomingOffer``) to do, in order. The
/// machine does no I/O: each action that has a result (a disk operation, a timer, the
/// application's answer) comes back as the event named beside it.
enum IncomingOfferAction: Sendable {
  // MARK: The application

  /// Ask the application about the offer (a ``ResourceOffer``), and schedule
  /// ``IncomingOfferStateMachine/decisionTimedOut()``.
  case ask
  /// The question is over: the application may no longer answer it.
  case withdrawQuestion
  /// Report the offer accepted (``ResourceEvent/offerReceived(_:)``), after reporting each file
  /// left out (`skipped`) as finished; the driver creates the transfer's progress and
  /// advances each file to its resume offset.
  case reportAccepted(skipped: [Int])
  /// Report that file `index` started arriving.
  case reportStarted(Int)
  /// Report file `index` finished, with its verdict (``Conclusion``).
  case conclude(Conclusion)
  /// Report the offer refused before anything was written (``ResourceEvent/offerRefused``).
  case reportRefused(ResourceError)

  // MARK: The disk

  /// Open the staging area under `options.destination`, remove its stale files, and claim a
  /// staging name for each file (a streamed file gets a fresh one):
  /// ``IncomingOfferStateMachine/stagingOpened(_:)``.
  case openStaging(ReceiveOptions)
  /// Wait for the staging names of these files, which other offers hold: once one is let go
  /// and the offer still ``IncomingOfferStateMachine/waitsForClaim(_:)``, claim it and say so
  /// (``IncomingOfferStateMachine/claimed(_:into:)``); and
  /// ``IncomingOfferStateMachine/claimWaitOver(into:)`` after
  /// ``IncomingOfferStateMachine/claimWait``.
  case waitForClaims(Set<Int>)
  /// Give these files staging names of their own, claimed, from nothing:
  /// ``IncomingOfferStateMachine/namedFresh(_:)``.
  case nameFresh([Int])
  /// Find out what the destination and the staging area hold for these files:
  /// ``IncomingOfferStateMachine/surveyed(_:)``.
  case survey([Survey])
  /// Reserve `bytes` of free space: ``IncomingOfferStateMachine/reserved(_:for:)`` with
  /// `purpose`.
  case reserve(UInt64, for: Reservation)
  /// Give back `bytes` of reserved space.
  case release(UInt64)
  /// Release these staging names (they were this offer's).
  case releaseNames([String])
  /// Record what these (large) staged files are, for people.
  case writeMeta([Int])
  /// Hash this side's copy of held file `index`, off the offer's order:
  /// ``IncomingOfferStateMachine/heldHashed(_:_:)``.
  case hashHeld(Int)
  /// Leave the hash of held file `index` under way (its comparison was stopped): its result
  /// is ignored.
  case stopHashing(Int)
  /// Check that held file `index`'s copy is still this sender's with the offered size and
  /// time: ``IncomingOfferStateMachine/heldCopyChecked(_:stillThere:)``.
  case checkHeldCopy(Int)
  /// Open file `index`'s staging file at its resume offset, hashing what it holds:
  /// ``IncomingOfferStateMachine/opened(_:_:)``.
  case open(Int)
  /// Write the piece given with the event to file `index`'s staging file:
  /// ``IncomingOfferStateMachine/wrote(_:_:)``.
  case write(Int)
  /// Land file `index`: settle its staging file (checked against `digest` — nil: its length
  /// only, the sender gave no digest — and closed) and, if it
  /// holds what was sent, place it as the options say — beside the offer's order, several
  /// files at once, so that its result may come after later files' events:
  /// ``IncomingOfferStateMachine/landed(_:_:into:)``.
  case land(Int, digest: [UInt8]?)
  /// Create empty folder `index`: ``IncomingOfferStateMachine/landed(_:_:into:)``.
  case makeFolder(Int)
  /// Close file `index`'s staging file without settling it (it keeps its bytes).
  case discard(Int)
  /// Remove a file's staged bytes (and its `.meta`), by its staging name.
  case removeStaged(String)

  // MARK: The sender

  /// Accept: where each file starts (left out, its resume offset, or held).
  case sendAccept([FileStart])
  /// Gather a FILE_ACK.
  case queueAck(index: Int, status: FileVerdict, reason: String)
  /// Send the FILE_ACKs gathered.
  case flushAcks
  /// Send gathered FILE_ACKs within 20 ms: ``IncomingOfferStateMachine/ackTimerFired()``.
  case scheduleAckFlush
  /// Grant the sender `bytes` more credit on the offer.
  case grant(Int)
  /// Tell the sender the offer ends (RESET), with this reason, and why (each front end says
  /// the cause in its own protocol: the Ferry wire as a RESET's code).
  case reset(reason: String, cause: OfferEnd)
  /// The offer's channel is done with: forget it (after what was queued on it).
  case closeChannel

  // MARK: Time and the end

  /// Check for a stalled sender after a quarter of the stall limit:
  /// ``IncomingOfferStateMachine/stallCheck(now:)``.
  case scheduleStallCheck
  /// The accepted offer is over: stop hashing held files, flush the received files to disk,
  /// give back what is left (names, space, the staging folder if empty), send the gathered
  /// FILE_ACKs and close the channel, then report the offer finished with `error` (or, if
  /// nil, a failure to flush).
  case finish(error: TransferError?)
  /// The offer ended before it was accepted: remove the staging folder if it is empty (and
  /// no other offer uses it).
  case cleanUp
  /// Log that the offer stopped, and why.
  case log(String)

  /// What the machine asks to be found out about a file before it accepts.
  struct Survey: Hashable, Sendable {
    let index: Int
    /// Look for this sender's copy with the offered size and time (``FileFacts/heldCopy``),
    /// also under the rename policy's names when `renamed`.
    let held: Bool
    let renamed: Bool
    /// Look whether the name holds a file this sender placed (the skip policy).
    let placedBySender: Bool
    /// Read how much of it is staged (a resume).
    let staged: Bool
  }

  /// Why space is reserved.
  enum Reservation: Hashable, Sendable {
    /// The offer's files, before it is accepted.
    case offer
    /// A held file the sender sends whole after all.
    case whole(Int)
    /// The next step of a streamed file.
    case stream(Int)
  }

  /// A file's verdict, for the application and for the sender.
  struct Conclusion: Sendable {
    let index: Int
    /// What the application is told: where it is (nil: skipped), or why it failed.
    let result: Result<URL?, TransferError>
    /// Its verified digest (nil when it was not received).
    let digest: FileDigest?
    /// Reported as found identical (nothing written) rather than finished.
    let identical: Bool
  }
}
