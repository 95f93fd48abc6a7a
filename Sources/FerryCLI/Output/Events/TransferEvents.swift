import Ferry
import FerryAgent
import FerryLocalSend

/// `offer`: an offer `receive` accepted, as it starts.
struct OfferStarted: EventRecord {
  static let events: [Event] = [.offer]
  let peer: String
  let files: Int
  let folders: Int
  let bytes: Int
  let streamed: Int
}

/// `refused`: an offer refused before anything was written.
struct OfferRefused: EventRecord {
  static let events: [Event] = [.refused]
  let peer: String
  let files: Int
  let code: String
  let message: String
}

/// `progress`: a transfer's progress (null `total` while a streamed file is open).
struct TransferProgressed: EventRecord {
  static let events: [Event] = [.progress]
  let peer: String
  let bytes: Int
  let total: Int?
  let bytesPerSecond: Int
  let filesDone: Int
  let files: Int

  init(_ snapshot: ProgressSnapshot, peer: String) {
    self.peer = peer
    bytes = Int(snapshot.bytes)
    total = snapshot.totalIsKnown ? Int(snapshot.total) : nil
    bytesPerSecond = wholeNumber(snapshot.bytesPerSecond)
    filesDone = snapshot.filesDone
    files = snapshot.fileCount
  }
}

/// `file-done`: one file's verdict, on either end (`saved`: where it is on `receive`, `-` with
/// `--stdout`, null when skipped or on `send`).
struct FileDone: EventRecord {
  static let events: [Event] = [.fileDone]
  let peer: String
  let path: String
  let status: String
  let checksum: String?
  let digest: String?
  let sha256: String?
  let saved: String?

  /// A file's digest (nil: none, a file skipped before it was read) in its three fields.
  private init(peer: String, path: String, status: String, digest: FileDigest?, saved: String?) {
    self.peer = peer
    self.path = path
    self.status = status
    checksum = digest?.checksum.rawValue
    self.digest = digest?.hex
    sha256 = digest.flatMap { $0.checksum == .sha256 ? $0.hex : nil }
    self.saved = saved
  }

  /// What a LocalSend device answered for a file (`status`: stored, skipped or failed).
  init(localSend file: LocalSendSentFile, status: String, to peer: String) {
    self.init(
      peer: peer, path: file.path, status: status,
      digest: file.digest.map { FileDigest(.sha256, $0) }, saved: nil)
  }

  /// What `send` heard of a file.
  init(sent result: FileResult, to peer: String) {
    self.init(
      peer: peer, path: result.path, status: "\(result.status)",
      digest: result.digest.isEmpty ? nil : FileDigest(result.checksum, result.digest),
      saved: nil)
  }

  /// What `receive` did with a file: `status` (stored, skipped, identical), where it is.
  init(
    received path: String, from peer: String, status: String, digest: FileDigest?, saved: String?
  ) {
    self.init(peer: peer, path: path, status: status, digest: digest, saved: saved)
  }

  /// Its fields, spelled out rather than encoded: one is written for every file of a batch
  /// (EventRecordTests checks them against the encoded ones).
  var fields: [(String, JSONValue)] {
    func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
    return [
      ("peer", .string(peer)), ("path", .string(path)), ("status", .string(status)),
      ("checksum", text(checksum)), ("digest", text(digest)), ("sha256", text(sha256)),
      ("saved", text(saved)),
    ]
  }
}

/// `left-out`: something `send` does not send, before anyone is asked.
struct LeftOut: EventRecord {
  static let events: [Event] = [.leftOut]
  let path: String
  let reason: String
  let unreadable: Bool
}

/// `done` on `send`: one receiver's batch.
struct SendDone: EventRecord {
  static let events: [Event] = [.done]
  let peer: String
  let files: Int
  let folders: Int
  let bytes: Int
  let stored: Int
  let identical: Int
  let bytesSent: Int
  let unreadable: Int
}

/// `done` on `receive`: one offer (`error` and `code` null on success).
struct ReceiveDone: EventRecord {
  static let events: [Event] = [.done]
  let peer: String
  let files: Int
  let folders: Int
  let bytes: Int
  let error: String?
  let code: String?
}

/// `retrying`: `send` lost the link and tries again after `delay` seconds.
struct Retrying: EventRecord {
  static let events: [Event] = [.retrying]
  let peer: String
  let attempt: Int
  let delay: Double
  let reason: String
}

/// `resumed`: attempt `attempt` to `peer` is sending again.
struct Resumed: EventRecord {
  static let events: [Event] = [.resumed]
  let peer: String
  let attempt: Int
}

/// `staging-cleaned`: stale partial files removed from `dir`'s staging folder.
struct StagingCleaned: EventRecord {
  static let events: [Event] = [.stagingCleaned]
  let files: Int
  let bytes: Int
  let dir: String
}
