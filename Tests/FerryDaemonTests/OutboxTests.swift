import Foundation
import Synchronization
import Testing

@testable import FerryDaemon

/// The outbox's bookkeeping, on a folder of its own: durable before it answers, what is due,
/// when to wake, what a hand-edited file does.
@Suite("The outbox")
struct OutboxTests {
  static func folder() -> URL {
    let url = URL(fileURLWithPath: NSTemporaryDirectory())
      .appendingPathComponent("ferry-outbox-\(UUID().uuidString)")
    return url
  }

  static func entry(
    id: String = DaemonID.new(), expires: Date = Date(timeIntervalSinceNow: 3600),
    size: UInt64 = 10
  ) -> OutboxEntry {
    OutboxEntry(
      id: id, to: "peer", fingerprint: String(repeating: "AB", count: 32), byKey: true,
      carrier: .ferry, paths: ["/x"], when: .seen, created: Date(), expires: expires,
      files: [
        .init(
          path: "x", source: "/x", folder: false, size: size, modified: 0, device: 1, inode: 2,
          status: .pending)
      ])
  }

  @Test("a send is on disk (0600) when add returns, and read back as it was")
  func durable() throws {
    let folder = Self.folder()
    let outbox = Outbox(folder: folder, keepEnded: 86_400) { _ in }
    let entry = Self.entry()
    try outbox.add(entry)
    let path = folder.appendingPathComponent(entry.id + ".json").path
    let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
    #expect(mode == 0o600)
    let again = Outbox(folder: folder, keepEnded: 86_400) { _ in }
    try again.load()
    #expect(again.entry(entry.id) == entry)
  }

  @Test("the timer wakes only for times to come: a retry whose time is past waits for its peer")
  func wakesOnlyForTheFuture() throws {
    let outbox = Outbox(folder: Self.folder(), keepEnded: 86_400) { _ in }
    let entry = Self.entry()
    try outbox.add(entry)
    outbox.update(entry.id) {
      $0.state = .queued(retryAt: Date(timeIntervalSinceNow: -30))
      return true
    }
    let now = Date()
    let next = try #require(outbox.expire(now: now))
    #expect(next > now, "woke for a time already past: \(next)")
    #expect(outbox.due(for: entry.fingerprint, carrier: .ferry, now: now).count == 1)
  }

  @Test("a send being delivered is not expired under it, and one that ended stays ended")
  func expiryTakesOnlyWaitingSends() throws {
    let reported = Mutex<[String]>([])
    let outbox = Outbox(folder: Self.folder(), keepEnded: 86_400) { event in
      if case .ended(let entry) = event {
        reported.withLock { $0.append(entry.state.word) }
      }
    }
    let delivering = Self.entry(expires: Date(timeIntervalSinceNow: -1))
    let waiting = Self.entry(expires: Date(timeIntervalSinceNow: -1))
    try outbox.add(delivering)
    try outbox.add(waiting)
    outbox.update(delivering.id) {
      $0.state = .delivering(since: Date())
      return true
    }
    _ = outbox.expire()
    #expect(outbox.entry(delivering.id)?.state.word == "delivering")
    #expect(outbox.entry(waiting.id)?.state.word == "expired")
    _ = outbox.expire()
    #expect(reported.withLock { $0 } == ["expired"], "ended once")
  }

  @Test("a file that is not a send, or one whose sizes do not add up, is moved aside")
  func corruptMovedAside() throws {
    let folder = Self.folder()
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try Data("{\"not\": \"a send\"".utf8).write(
      to: folder.appendingPathComponent("0123456789abcdef.json"))
    // Sizes that overflow 64 bits: written by hand, never by the daemon.
    var huge = Self.entry(id: "fedcba9876543210", size: UInt64.max)
    huge.files.append(huge.files[0])
    let encoder = JSONEncoder()
    encoder.dateEncodingStrategy = .iso8601
    try encoder.encode(huge).write(to: folder.appendingPathComponent("fedcba9876543210.json"))
    try Data("half".utf8).write(to: folder.appendingPathComponent(".x.json.tmp-1-2"))
    let problems = Mutex<[String]>([])
    let outbox = Outbox(folder: folder, keepEnded: 86_400) { event in
      if case .corrupt(let path, _) = event { problems.withLock { $0.append(path) } }
    }
    try outbox.load()
    #expect(outbox.all.isEmpty)
    #expect(problems.withLock { $0.count } == 2)
    let aside = try FileManager.default.contentsOfDirectory(
      atPath: folder.appendingPathComponent("corrupt").path)
    #expect(aside.count == 2)
    #expect(
      !FileManager.default.fileExists(atPath: folder.appendingPathComponent(".x.json.tmp-1-2").path)
    )
  }

  @Test("a total is saturated, never a trap")
  func saturatingTotal() {
    var entry = Self.entry(size: UInt64.max)
    entry.files.append(entry.files[0])
    #expect(entry.total == UInt64.max)
    #expect(!entry.isWellFormed)
  }

  @Test("a send written before cancels were kept (no cancelRequested) still reads")
  func olderFileReads() throws {
    let folder = Self.folder()
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let entry = Self.entry(id: "00112233445566ff")
    let encoder = JSONEncoder()
    encoder.dateEncodingStrategy = .iso8601
    var object = try #require(
      JSONSerialization.jsonObject(with: encoder.encode(entry)) as? [String: Any])
    object["cancelRequested"] = nil
    try JSONSerialization.data(withJSONObject: object).write(
      to: folder.appendingPathComponent("00112233445566ff.json"))
    let outbox = Outbox(folder: folder, keepEnded: 86_400) { _ in }
    try outbox.load()
    #expect(outbox.entry("00112233445566ff") == entry)
  }

  @Test("attempts past the most a send has (written by hand) are a corrupt file, not a trap")
  func attemptsInRange() {
    var entry = Self.entry()
    entry.attempts = Courier.maximumAttempts
    #expect(entry.isWellFormed)
    entry.attempts = .max
    #expect(!entry.isWellFormed)
    entry.attempts = -1
    #expect(!entry.isWellFormed)
  }

  @Test(
    "a send cancelled while delivering, the daemon stopped before the attempt ended: cancelled at the next start, and said once"
  )
  func cancelHoldsAcrossRestart() throws {
    let folder = Self.folder()
    let first = Outbox(folder: folder, keepEnded: 86_400) { _ in }
    let entry = Self.entry()
    try first.add(entry)
    first.update(entry.id) {
      $0.state = .delivering(since: Date())
      $0.attempts = 1
      $0.cancelRequested = true
      return true
    }
    let ended = Mutex<[String]>([])
    let again = Outbox(folder: folder, keepEnded: 86_400) { event in
      if case .ended(let entry) = event { ended.withLock { $0.append(entry.state.word) } }
    }
    try again.load()
    #expect(again.entry(entry.id)?.state.word == "cancelled")
    #expect(ended.withLock { $0 } == ["cancelled"])
    let third = Outbox(folder: folder, keepEnded: 86_400) { event in
      if case .ended = event { Issue.record("reported again at the next start") }
    }
    try third.load()
    #expect(third.entry(entry.id)?.state.word == "cancelled")
  }

  @Test("a send for now whose minute ran out says why its last attempt failed, if it had one")
  func forNowSaysWhy() throws {
    let outbox = Outbox(folder: Self.folder(), keepEnded: 86_400) { _ in }
    let base = Self.entry(expires: Date(timeIntervalSinceNow: -1))
    let entry = OutboxEntry(
      id: base.id, to: base.to, fingerprint: base.fingerprint, byKey: true, carrier: .ferry,
      paths: base.paths, when: .now, created: base.created, expires: base.expires,
      files: base.files)
    try outbox.add(entry)
    outbox.update(entry.id) {
      $0.lastProblem = .init(code: "authentication", message: "not the key")
      return true
    }
    _ = outbox.expire()
    guard case .failed(_, let problem) = outbox.entry(entry.id)?.state else {
      Issue.record("not failed: \(String(describing: outbox.entry(entry.id)))")
      return
    }
    #expect(problem.code == "authentication")
  }

  @Test("a browser's upload the daemon stopped under is failed at the next start, said once")
  func uploadEndsWithItsDaemon() throws {
    let folder = Self.folder()
    let first = Outbox(folder: folder, keepEnded: 86_400) { _ in }
    for delivering in [false, true] {
      var entry = Self.entry()
      entry.upload = true
      try first.add(entry)
      if delivering {
        first.update(entry.id) {
          $0.state = .delivering(since: Date())
          $0.attempts = 1
          return true
        }
      }
    }
    let ended = Mutex<[String]>([])
    let again = Outbox(folder: folder, keepEnded: 86_400) { event in
      if case .ended(let entry) = event { ended.withLock { $0.append(entry.state.word) } }
    }
    try again.load()
    #expect(again.all.map(\.state.word) == ["failed", "failed"])
    #expect(ended.withLock { $0 } == ["failed", "failed"])
  }

  @Test(
    "a send for now waits its turn behind another to its peer that is under way, past its minute"
  )
  func nowWaitsItsTurn() throws {
    let outbox = Outbox(folder: Self.folder(), keepEnded: 86_400) { _ in }
    let first = Self.entry()
    try outbox.add(first)
    outbox.update(first.id) {
      $0.state = .delivering(since: Date())
      return true
    }
    var now = OutboxEntry(
      id: DaemonID.new(), to: "peer", fingerprint: first.fingerprint, byKey: true,
      carrier: .ferry, paths: ["/y"], when: .now, created: Date(),
      expires: Date(timeIntervalSinceNow: 60), files: first.files)
    now.upload = true
    try outbox.add(now)
    _ = outbox.expire(now: Date(timeIntervalSinceNow: 120))
    #expect(outbox.entry(now.id)?.state.word == "queued")
    outbox.update(first.id) {
      $0.state = .delivered(at: Date())
      return true
    }
    // Between two sends the courier's task for the peer still runs: busy all the same.
    _ = outbox.expire(now: Date(timeIntervalSinceNow: 120), busy: ["ferry:\(first.fingerprint)"])
    #expect(outbox.entry(now.id)?.state.word == "queued")
    _ = outbox.expire(now: Date(timeIntervalSinceNow: 120))
    #expect(outbox.entry(now.id)?.state.word == "failed")
  }
}
