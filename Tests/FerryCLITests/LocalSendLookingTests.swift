import Ferry
import FerryLocalSend
import Testing

@testable import FerryCLI

/// How `ferry send --localsend` keeps what it hears and paces its retries.
@Suite("LocalSend sightings and retries")
struct LocalSendLookingTests {
  private static let key = String(repeating: "AB", count: 32)

  private func sighting(
    _ alias: String, key: String = key, at address: String, via: LocalSendSighting.Via,
    proven: Bool = false
  ) -> LocalSendSighting {
    LocalSendSighting(
      device: LocalSendDevice(
        alias: alias, deviceModel: nil, deviceType: "mobile", fingerprint: key, port: 53317),
      address: address, via: via, proven: proven)
  }

  @Test(
    "a key claimed from another address never hides the device holding it; a proven sighting is never replaced by a claim"
  )
  func replayedClaim() {
    var book = LocalSendSightings()
    book.note(sighting("Phone", at: "10.0.0.2", via: .register, proven: true), wanted: true)
    // A hostile device replays the phone's announcement from its own address.
    book.note(sighting("Phone", at: "10.0.0.66", via: .announcement), wanted: true)
    #expect(Set(book.all.map(\.address)) == ["10.0.0.2", "10.0.0.66"])
    // Tried in order: the proven address first.
    #expect(LocalSendSightings.ordered(book.all).map(\.address) == ["10.0.0.2", "10.0.0.66"])
    // The same key written otherwise (lower case) is the same device; a claim at the proven
    // address does not replace the proof.
    book.note(
      sighting("Phone", key: Self.key.lowercased(), at: "10.0.0.2", via: .announcement),
      wanted: true)
    #expect(book.byKey.count == 1)
    #expect(book.all.first { $0.address == "10.0.0.2" }?.proven == true)
  }

  @Test(
    "addresses are tried proven first, IPv4 before IPv6, a link-local one without its zone last")
  func order() {
    let sightings = [
      sighting("Phone", at: "fe80::1", via: .announcement),
      sighting("Phone", at: "fd00::5", via: .announcement),
      sighting("Phone", at: "fe80::1%wlan0", via: .announcement),
      sighting("Phone", at: "192.168.1.7", via: .announcement),
      sighting("Phone", at: "192.168.1.9", via: .answer, proven: true),
    ]
    #expect(
      LocalSendSightings.ordered(sightings).map(\.address) == [
        "192.168.1.9", "192.168.1.7", "fd00::5", "fe80::1%wlan0", "fe80::1",
      ])
  }

  @Test(
    "a look ends 2.5 s after the first device named (never before 3 s); with none and no name, at 6 s"
  )
  func listening() {
    let start = ContinuousClock.now
    func done(_ first: Duration?, _ now: Duration, named: Bool = true) -> Bool {
      LocalSendTargets.doneListening(
        since: start, firstMatch: first.map { start + $0 }, now: start + now, named: named)
    }
    #expect(!done(.milliseconds(100), .seconds(2)))
    #expect(!done(.milliseconds(100), .milliseconds(2900)))
    #expect(done(.milliseconds(100), .seconds(3)))
    #expect(!done(.seconds(4), .seconds(6)))
    #expect(done(.seconds(4), .milliseconds(6500)))
    #expect(!done(nil, .seconds(5), named: false))
    #expect(done(nil, .seconds(6), named: false))
    // A name is looked for until the deadline.
    #expect(!done(nil, .seconds(60), named: true))
  }

  @Test("a flood of made-up devices cannot push out the one looked for")
  func flood() {
    var book = LocalSendSightings()
    for index in 0..<1000 {
      let key = String(repeating: "0", count: 60) + String(format: "%04X", index)
      book.note(
        sighting("fake \(index)", key: key, at: "10.0.0.9", via: .announcement), wanted: false)
    }
    #expect(book.all.count == LocalSendSightings.capacity)
    book.note(sighting("Phone", at: "10.0.0.2", via: .announcement), wanted: true)
    #expect(book.all.contains { $0.device.alias == "Phone" })
  }

  @Test(
    "sessions are paced as a Ferry send's (1, 2, 4, 8, 15 s), at most 5 in a row without a file delivered"
  )
  func backoff() {
    // No jitter, so that the waits are the policy's bases.
    let policy = RetryPolicy(retryFor: .seconds(600), jitter: 0)
    var retry = RetryLoop(
      policy: policy, maximumWithoutProgress: LocalSendUpload.maximumSessionsWithoutProgress)
    let start = ContinuousClock.now
    _ = retry.begin()
    var waits: [Duration] = []
    while let delay = retry.next(at: start) {
      waits.append(delay)
      _ = retry.begin()
    }
    #expect(waits == [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(15)])
    #expect(retry.attempt == 6)
    // A file delivered starts the count and the backoff over.
    retry.record(.progress, at: .now)
    #expect(retry.next(at: .now) == .seconds(1))
    _ = retry.begin()
    #expect(retry.attempt == 7)
  }

  @Test("--retry-for bounds the wait: no session that would start after it, none with 0")
  func retryWindow() {
    let start = ContinuousClock.now
    var short = RetryLoop(policy: RetryPolicy(retryFor: .seconds(4), jitter: 0), now: start)
    _ = short.begin()
    #expect(short.next(at: start) == .seconds(1))
    _ = short.begin()
    #expect(short.next(at: start + .seconds(1)) == .seconds(2))
    _ = short.begin()
    // 4 s more from 3 s in would end at 7 s, past the 4 s without progress.
    #expect(short.next(at: start + .seconds(3)) == nil)
    var never = RetryLoop(policy: RetryPolicy(retryFor: .zero))
    _ = never.begin()
    #expect(never.next(at: .now) == nil)
  }

  @Test("busy and no answer pass only after a cut; a refusal, a PIN or a wrong key never")
  func transient() {
    #expect(LocalSendUpload.isTransient(.request(.unreachable("x")), afterCut: false))
    #expect(LocalSendUpload.isTransient(.request(.failed("x")), afterCut: false))
    #expect(!LocalSendUpload.isTransient(.busy, afterCut: false))
    #expect(LocalSendUpload.isTransient(.busy, afterCut: true))
    #expect(!LocalSendUpload.isTransient(.request(.timedOut), afterCut: false))
    for final in [
      LocalSendSendError.declined(""), .pinRequired, .tooManyPinAttempts,
      .request(.wrongCertificate("x")), .refused(413, ""),
    ] {
      #expect(!LocalSendUpload.isTransient(final, afterCut: true), "\(final)")
    }
  }
}
