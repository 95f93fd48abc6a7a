import Foundation

/// One send the daemon was asked for (`POST /v1/sends`, `ferry send --later`): whom it is for
/// (a key, whatever name or address it is found by), what it holds (each file as it was when
/// the send was queued), and where it stands. Written to the outbox as it changes
/// (``OutboxStore``); its states carry their data.
package struct OutboxEntry: Codable, Sendable, Equatable {
  /// How it is delivered.
  package enum Carrier: String, Codable, Sendable {
    case ferry, localsend
  }

  /// When it is delivered.
  package enum When: String, Codable, Sendable {
    /// At once; it fails when the peer is not seen within ``Outbox/nowWindow``.
    case now
    /// When the peer is seen, until it expires.
    case seen
  }

  /// Why a send ended without delivering everything.
  package struct Problem: Codable, Sendable, Equatable {
    /// A stable code (the `--json` error codes, or `expired`, `cancelled`, `no-peer`).
    package let code: String
    /// Words for people.
    package let message: String

    /// A problem.
    package init(code: String, message: String) {
      (self.code, self.message) = (code, message)
    }
  }

  /// Where it stands.
  package enum State: Codable, Sendable, Equatable {
    /// Waiting for its peer; `retryAt`: after a failed attempt, not before then.
    case queued(retryAt: Date?)
    /// An attempt is under way, since then.
    case delivering(since: Date)
    /// Every file was delivered (or left out as changed or missing).
    case delivered(at: Date)
    /// It ended without delivering everything.
    case failed(at: Date, problem: Problem)
    /// It was cancelled.
    case cancelled(at: Date)
    /// Its peer was not seen before it expired.
    case expired(at: Date)

    /// Whether it is over.
    package var ended: Bool {
      switch self {
      case .queued, .delivering: false
      case .delivered, .failed, .cancelled, .expired: true
      }
    }

    /// When it ended, if it did.
    package var endedAt: Date? {
      switch self {
      case .queued, .delivering: nil
      case .delivered(let at), .failed(let at, _), .cancelled(let at), .expired(let at): at
      }
    }

    /// The API's word for it.
    package var word: String {
      switch self {
      case .queued: "queued"
      case .delivering: "delivering"
      case .delivered: "delivered"
      case .failed: "failed"
      case .cancelled: "cancelled"
      case .expired: "expired"
      }
    }
  }

  /// One file (or empty folder) of the send, as it was when the send was queued.
  package struct File: Codable, Sendable, Equatable {
    /// What happened to it.
    package enum Status: String, Codable, Sendable {
      case pending, stored, identical, skipped, failed, corrupt, changed, missing
    }

    /// Its path at the receiver.
    package let path: String
    /// Where it is here.
    package let source: String
    /// Whether it is an empty folder.
    package let folder: Bool
    /// Its size when queued.
    package let size: UInt64
    /// Its modification time when queued (nanoseconds since 1970).
    package let modified: Int64
    /// Its device and inode when queued.
    package let device: UInt64
    package let inode: UInt64
    /// What happened to it.
    package var status: Status
    /// Whether it is a stream read once, as its bytes come (a browser's file: ``BrowserUploads``),
    /// rather than a file on disk. (Optional: files written before it was kept have none.)
    package var streamed: Bool? = nil

    /// Whether it is settled: delivered, or not to be sent (anything but pending or failed).
    package var isSettled: Bool { status != .pending && status != .failed }
  }

  /// The outbox file's format.
  package static let format = 1

  /// The format it was written in.
  package var format = OutboxEntry.format
  /// Its identifier: 16 lower-case hex digits.
  package let id: String
  /// The receiver as it was named.
  package let to: String
  /// The receiver's key (64 upper-case hex digits): only a peer that proves it is sent to.
  package let fingerprint: String
  /// Whether `to` named the key (digits of it, or a trusted peer's name): the user's consent
  /// to that key. A key found by a name announced around is not: its peer is checked against
  /// the trusted names it looks like, as `ferry send --to NAME` checks it.
  package let byKey: Bool
  /// How it is delivered.
  package let carrier: Carrier
  /// The paths as they were given.
  package let paths: [String]
  /// When it is delivered.
  package let when: When
  /// When it was queued.
  package let created: Date
  /// When it expires if its peer is not seen.
  package let expires: Date
  /// Where it stands.
  package var state: State
  /// Attempts made so far in which the receiver proved the key (it was asked, or a LocalSend
  /// device accepted), and the one under way.
  package var attempts = 0
  /// Attempts since the last counted one in which nobody proved the key (a spoofed
  /// announcement, a peer gone): not counted, but the wait before the next grows with them.
  /// (Optional: files written before it was kept have none.)
  package var misses: Int?
  /// Why the last attempt failed, for a send for now that then runs out of its minute.
  package var lastProblem: Problem?
  /// True when it was cancelled while being delivered: it ends cancelled when the attempt
  /// does — or, should the daemon stop first, when it starts again. (Optional: a file written
  /// before it was kept has no such field, and still reads.)
  package var cancelRequested: Bool?
  /// True for a browser's upload (``BrowserUploads``): its files' bytes are read once, as they
  /// come, so it is tried once and never again after the daemon stops. (Optional: files
  /// written before it was kept have none.)
  package var upload: Bool?
  /// Bytes settled so far (delivered, or left out).
  package var bytes: UInt64 = 0
  /// Its files.
  package var files: [File]

  /// A new entry, queued.
  package init(
    id: String, to: String, fingerprint: String, byKey: Bool, carrier: Carrier, paths: [String],
    when: When, created: Date, expires: Date, files: [File]
  ) {
    (self.id, self.to, self.fingerprint, self.byKey, self.carrier, self.paths, self.when) = (
      id, to, fingerprint, byKey, carrier, paths, when
    )
    // Whole seconds: what the outbox's file (ISO 8601) and the API keep of a time.
    (self.created, self.expires, self.files) = (
      Date(timeIntervalSince1970: created.timeIntervalSince1970.rounded(.down)),
      Date(timeIntervalSince1970: expires.timeIntervalSince1970.rounded(.down)), files
    )
    state = .queued(retryAt: nil)
  }

  /// The bytes of its settled files (delivered, or not to be sent).
  package var settledBytes: UInt64 {
    files.filter(\.isSettled).reduce(0) { $0 &+ $1.size }
  }

  /// Its bytes in all.
  package var total: UInt64 {
    // Saturating: a file's size is what the disk said, never trusted to add up.
    files.reduce(0) { sum, file in
      let (total, overflow) = sum.addingReportingOverflow(file.size)
      return overflow ? .max : total
    }
  }

  /// Whether it holds what this daemon writes: its numbers in their ranges (sizes that add
  /// up within 2^62, at most ``Outbox/maximumFiles`` files and ``Courier/maximumAttempts``
  /// attempts, a 64-digit key), so that a file
  /// changed by hand cannot trap the daemon that reads it.
  package var isWellFormed: Bool {
    var sum: UInt64 = 0
    for file in files {
      let (next, overflow) = sum.addingReportingOverflow(file.size)
      guard !overflow else { return false }
      sum = next
    }
    return sum <= OutboxFiles.maximumBytes && files.count <= Outbox.maximumFiles
      && (0...Courier.maximumAttempts).contains(attempts)
      && (0...Courier.maximumMisses).contains(misses ?? 0) && fingerprint.utf8.count == 64
      && fingerprint.utf8.allSatisfy { (48...57).contains($0) || (65...70).contains($0) }
  }
}
