import Ferry
import FerryLocalSend

/// What a send reports as it goes, to each receiver (`label`: the name or address the receiver
/// was asked for by, or its name once it is known), in order for one receiver. An application
/// shows them (a terminal's lines and bars, NDJSON, a daemon's event stream).
public enum SendEvent: Sendable {
  // MARK: Finding and asking

  /// A Ferry receiver was found through discovery.
  case found(DiscoveredPeer)
  /// A Ferry receiver is being connected to at an address.
  case connecting(address: String)
  /// The receiver (`peer`, reached at `address` when one was given) is asked to accept; the
  /// connection's verification code is `code` (a reconnection has a code of its own).
  case asked(label: String, peer: PeerID, address: String?, code: VerificationCode)
  /// A LocalSend device was found (its certificate pinned when it announced one) and is asked.
  case askedLocalSend(peer: PeerID, device: LocalSendDevice, target: LocalSendTarget)
  /// The receiver's name is trusted with another key (or looks like a trusted one): the
  /// loud warning is owed before anyone decides whether to send to it.
  case keyChanged(PeerID, status: KnownPeers.Status, previous: Fingerprint)
  /// The receiver declined.
  case declined(label: String, reason: String)
  /// The receiver accepted; `code`: the verification code of the connection (Ferry).
  case accepted(PeerID, code: VerificationCode?)
  /// A LocalSend device accepted a session of `files` files.
  case acceptedLocalSend(PeerID, files: Int)

  // MARK: Sending

  /// Progress of the batch to `label`, counted over the whole batch (parts and attempts).
  case progress(label: String, ProgressSnapshot)
  /// Attempt `attempt` (after a reconnection) is sending again.
  case resumed(label: String, peer: PeerID, attempt: Int)
  /// Attempt `attempt` failed (`reason`); the next comes after `delay`. `wholeFiles`: a LocalSend
  /// send, whose cut files go again whole.
  case retrying(label: String, attempt: Int, delay: Duration, reason: String, wholeFiles: Bool)
  /// One file's verdict (Ferry).
  case file(label: String, FileResult)
  /// One file's verdict from a LocalSend device: what it answered, as a verdict.
  case localSendFile(label: String, LocalSendSentFile, status: FileStatus)
  /// The sending to `label` ended (its progress is drawn no more).
  case ended(label: String)
  /// The text was delivered: to a Ferry receiver in its invitation (`localSend` nil), or to a
  /// LocalSend device, which showed it or took it as a file.
  case textDelivered(PeerID, text: String, localSend: LocalSendTextOutcome?)
  /// The batch to one receiver is done.
  case done(SendSummary)
  /// Empty folders left out (LocalSend sends files only).
  case foldersLeftOut(Int)
  /// The send to `label` failed (it is also the send's result).
  case failed(label: String, SendFailure)
}

/// What a batch to one receiver came to.
public struct SendSummary: Sendable {
  /// The receiver.
  public let peer: PeerID
  /// Entries of the batch (files and empty folders).
  public let files: Int
  /// Of ``files``, the empty folders.
  public let folders: Int
  /// The batch's bytes (streamed files counted as what they came to).
  public let bytes: UInt64
  /// Files stored (and verified) by the receiver.
  public let stored: Int
  /// Files the receiver had already, the same.
  public let identical: Int
  /// Files the receiver did not ask for (a LocalSend device that has them, or took a subset).
  public let leftOut: Int
  /// File bytes that went over the wire, every attempt.
  public let bytesSent: UInt64
  /// Paths left out because they could not be read.
  public let unreadable: Int
  /// Files the receiver did not take (a LocalSend device's refusal or failure): the send
  /// failed, and says so instead of summing up.
  public let failed: Int
  /// How long it took.
  public let took: Duration

  /// A summary of these numbers.
  public init(
    peer: PeerID, files: Int, folders: Int, bytes: UInt64, stored: Int, identical: Int,
    leftOut: Int, bytesSent: UInt64, unreadable: Int, failed: Int = 0, took: Duration
  ) {
    self.peer = peer
    self.files = files
    self.folders = folders
    self.bytes = bytes
    self.stored = stored
    self.identical = identical
    self.leftOut = leftOut
    self.bytesSent = bytesSent
    self.unreadable = unreadable
    self.failed = failed
    self.took = took
  }
}
