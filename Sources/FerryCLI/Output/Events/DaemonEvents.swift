import FerryDaemon
import Foundation

/// `queued`: `ferry daemon` took a send into its outbox (written to disk).
struct SendQueued: EventRecord {
  static let events: [Event] = [.queued]
  let send: String
  let to: String
  let fingerprint: String
  let `protocol`: String
  let files: Int
  let bytes: UInt64
  let expires: String

  init(_ entry: OutboxEntry) {
    (send, to, fingerprint, `protocol`) = (
      entry.id, entry.to, entry.fingerprint, entry.carrier.rawValue
    )
    (files, bytes, expires) = (
      entry.files.count, entry.total, EventWriter.timestamp(entry.expires)
    )
  }
}

/// `delivering`: the peer of a queued send was seen, and an attempt begins.
struct SendDelivering: EventRecord {
  static let events: [Event] = [.delivering]
  let send: String
  let to: String
  let attempt: Int

  init(_ entry: OutboxEntry) {
    (send, to, attempt) = (entry.id, entry.to, entry.attempts)
  }
}

/// `send-ended`: a queued send ended: `state` delivered, failed, cancelled or expired.
struct SendEnded: EventRecord {
  static let events: [Event] = [.sendEnded]
  let send: String
  let to: String
  let state: String
  let files: Int
  let delivered: Int
  let changed: Int
  let code: String?
  let message: String?

  init(_ entry: OutboxEntry) {
    (send, to, state, files) = (entry.id, entry.to, entry.state.word, entry.files.count)
    delivered = entry.files.filter { [.stored, .identical, .skipped].contains($0.status) }.count
    changed = entry.files.filter { $0.status == .changed || $0.status == .missing }.count
    switch entry.state {
    case .failed(_, let problem): (code, message) = (problem.code, problem.message)
    case .expired: (code, message) = ("expired", "\(entry.to) was not seen in time")
    case .cancelled: (code, message) = ("cancelled", "cancelled")
    default: (code, message) = (nil, nil)
    }
  }
}

/// `outbox-problem`: a file in the outbox's folder that is not a send (moved to `path`), or a
/// send that could not be written (`path` null).
struct OutboxProblem: EventRecord {
  static let events: [Event] = [.outboxProblem]
  let send: String?
  let path: String?
  let reason: String
}

/// `asking`: a question waits for a person (`GET /v1/offers`, `ferry offers`): answer it by
/// its `question` id before `expires`.
struct AroundChanged: EventRecord {
  static let events: [Event] = [.around]
  let change: String
  let name: String
  let fingerprint: String?
  let `protocol`: String
}

struct QuestionAsked: EventRecord {
  static let events: [Event] = [.asking]
  let question: String
  let peer: String
  let kind: String
  let expires: String
}
