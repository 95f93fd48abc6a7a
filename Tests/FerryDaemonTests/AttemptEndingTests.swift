import FerryAgent
import Foundation
import Testing

@testable import FerryDaemon

/// How an outbox send's attempt ends: what counts as an attempt (the receiver proved the key),
/// what is only a miss, how long the send then waits, and what a cancel or a stop leaves.
@Suite("An outbox attempt's end")
struct AttemptEndingTests {
  static let now = Date(timeIntervalSince1970: 2_000_000_000)

  /// A send under way, on its `attempts`-th attempt.
  static func underWay(when: OutboxEntry.When = .seen, attempts: Int = 1) -> OutboxEntry {
    var entry = OutboxEntry(
      id: DaemonID.new(), to: "peer", fingerprint: String(repeating: "AB", count: 32),
      byKey: true, carrier: .ferry, paths: ["/x"], when: when, created: now,
      expires: now.addingTimeInterval(3600),
      files: [
        .init(
          path: "x", source: "/x", folder: false, size: 10, modified: 0, device: 1, inode: 2,
          status: .pending)
      ])
    entry.state = .delivering(since: now)
    entry.attempts = attempts
    return entry
  }

  static func end(
    _ entry: inout OutboxEntry, _ failure: SendFailure?, proved: Bool, cancelled: Bool = false,
    stopping: Bool = false
  ) {
    _ = AttemptEnding.endAttempt(
      &entry, failure: failure, provedKey: proved, cancelled: cancelled, stopping: stopping,
      now: now)
  }

  static func retryAt(_ entry: OutboxEntry) -> Date? {
    if case .queued(let at) = entry.state { return at }
    return nil
  }

  @Test(
    "a pin that failed (a device announcing a key it does not hold) is a miss: not counted, the wait grows"
  )
  func spoofIsAMiss() {
    var entry = Self.underWay()
    Self.end(&entry, SendFailure(.authentication, "not the key"), proved: false)
    #expect(entry.attempts == 0)
    #expect(entry.misses == 1)
    #expect(Self.retryAt(entry) == Self.now.addingTimeInterval(60))
    for expected in [120.0, 240, 480] {
      entry.state = .delivering(since: Self.now)
      entry.attempts += 1
      Self.end(&entry, SendFailure(.noPeer, "no answer"), proved: false)
      #expect(entry.attempts == 0)
      #expect(Self.retryAt(entry) == Self.now.addingTimeInterval(expected))
    }
    #expect(entry.lastProblem?.code == "no-peer")
  }

  @Test("a receiver asked that never answers counts: 20 of them and the send fails")
  func unansweredCounts() {
    var entry = Self.underWay(attempts: 1)
    entry.misses = 3
    Self.end(&entry, SendFailure(.noPeer, "nobody answered"), proved: true)
    #expect(entry.attempts == 1)
    #expect(entry.misses == nil, "a proven attempt ends the misses in a row")
    #expect(Self.retryAt(entry) == Self.now.addingTimeInterval(60))
    var last = Self.underWay(attempts: Courier.maximumAttempts)
    Self.end(&last, SendFailure(.noPeer, "nobody answered"), proved: true)
    #expect(last.state.word == "failed")
  }

  @Test("misses never trap: counted up to a bound, and the wait is an hour at most")
  func missesBounded() {
    var entry = Self.underWay()
    entry.misses = Courier.maximumMisses
    Self.end(&entry, SendFailure(.authentication, "not the key"), proved: false)
    #expect(entry.misses == Courier.maximumMisses)
    #expect(Self.retryAt(entry) == Self.now.addingTimeInterval(3600))
  }

  @Test(
    "a send for now: tried again within its minute while nobody proves the key, failed once one did"
  )
  func forNow() {
    var spoofed = Self.underWay(when: .now)
    Self.end(&spoofed, SendFailure(.authentication, "not the key"), proved: false)
    #expect(Self.retryAt(spoofed) == Self.now.addingTimeInterval(5))
    #expect(spoofed.lastProblem?.code == "authentication")
    var refused = Self.underWay(when: .now)
    Self.end(&refused, SendFailure(.transferFailed, "the link dropped"), proved: true)
    #expect(refused.state.word == "failed")
  }

  @Test(
    "the daemon stopping queues the send again without counting it; an answer that came meanwhile stands"
  )
  func stopping() {
    var cut = Self.underWay(attempts: 3)
    Self.end(&cut, SendFailure(.interrupted, "stopped"), proved: true, stopping: true)
    #expect(Self.retryAt(cut) == nil && cut.state.word == "queued")
    #expect(cut.attempts == 2)
    var reinviting = Self.underWay(attempts: 3)
    Self.end(&reinviting, SendFailure(.invitationFailed, "closed"), proved: true, stopping: true)
    #expect(Self.retryAt(reinviting) == nil && reinviting.attempts == 2)
    var declined = Self.underWay(attempts: 3)
    Self.end(&declined, SendFailure(.declined, "no"), proved: true, stopping: true)
    #expect(declined.state.word == "failed")
    var busy = Self.underWay(attempts: 3)
    Self.end(&busy, SendFailure(.busy, "busy"), proved: true, stopping: true)
    #expect(busy.attempts == 3, "a busy answer during a stop is an answer")
    #expect(Self.retryAt(busy) == Self.now.addingTimeInterval(240))
  }

  @Test("a cancel ends it cancelled, unless everything was delivered first")
  func cancel() {
    var cut = Self.underWay()
    Self.end(&cut, SendFailure(.interrupted, "cancelled"), proved: true, cancelled: true)
    #expect(cut.state.word == "cancelled")
    var late = Self.underWay()
    late.cancelRequested = true
    Self.end(&late, nil, proved: true)
    #expect(late.state.word == "delivered")
  }

  @Test("only a send under way ends: one expired or cancelled meanwhile is left as it is")
  func onlyUnderWay() {
    var entry = Self.underWay()
    entry.state = .cancelled(at: Self.now)
    #expect(
      !AttemptEnding.endAttempt(
        &entry, failure: nil, provedKey: true, cancelled: false, stopping: false, now: Self.now))
    #expect(entry.state.word == "cancelled")
  }

  @Test(
    "the rule is who proved the key, not the failure's kind: a LocalSend address failing its request unproven is a miss; a proven no-answer fails a send for now; a device's busy answer is a miss, its decline ends the send"
  )
  func provenNotKind() {
    var spoofed = Self.underWay(attempts: 2)
    Self.end(&spoofed, SendFailure(.transferFailed, "certificate is not the key"), proved: false)
    #expect(spoofed.attempts == 1)
    #expect(spoofed.misses == 1)
    var ignored = Self.underWay(when: .now)
    Self.end(&ignored, SendFailure(.noPeer, "nobody answered"), proved: true)
    #expect(ignored.state.word == "failed")
    var busy = Self.underWay(attempts: 2)
    busy.misses = 2
    Self.end(&busy, SendFailure(.busy, "busy"), proved: false)
    #expect(busy.attempts == 1)
    #expect(busy.misses == 3)
    #expect(Self.retryAt(busy) == Self.now.addingTimeInterval(480))
    var declined = Self.underWay(attempts: 2)
    declined.misses = 2
    Self.end(&declined, SendFailure(.declined, "no"), proved: false)
    #expect(declined.state.word == "failed")
    #expect(declined.misses == nil)
  }

  @Test(
    "a browser's upload is tried once: a failure that may pass, or the daemon stopping, ends it")
  func uploadTriedOnce() {
    for (failure, stopping) in [
      (SendFailure(.noPeer, "went away"), false), (SendFailure(.transferFailed, "cut"), false),
      (SendFailure(.interrupted, "the daemon stopped"), true),
    ] {
      for when in [OutboxEntry.When.now, .seen] {
        for proved in [true, false] {
          var entry = Self.underWay(when: when)
          entry.upload = true
          Self.end(&entry, failure, proved: proved, stopping: stopping)
          #expect(entry.state.word == "failed", "\(failure.kind) \(when) proved \(proved)")
        }
      }
    }
    var cancelled = Self.underWay(when: .now)
    cancelled.upload = true
    Self.end(&cancelled, SendFailure(.interrupted, "cancelled"), proved: true, cancelled: true)
    #expect(cancelled.state.word == "cancelled")
  }
}
