import Ferry
import FerryLocalSend
import Testing

@testable import FerryCLI

/// How `ferry send --localsend` keeps what it hears and paces its retries.
@Suite("LocalSend sightings and retries")
struct LocalSendLookingTests {
  private static let key = String(repeating: "AB", count: 32)

  private func sighting(
    _ alias: String, key: String = key, at address: String, via: LocalSendSighting.Via
  ) -> LocalSendSighting {
    LocalSendSighting(
      device: LocalSendDevice(
        alias: alias, deviceModel: nil, deviceType: "mobile", fingerprint: key, port: 53317),
      address: address, via: via)
  }

  @Test("a verified register sighting is not replaced by a multicast claim of the same key")
  func registerWins() {
    var book = LocalSendSightings()
    book.note(sighting("Phone", at: "10.0.0.2", via: .register), wanted: true)
    book.note(sighting("Phone", at: "10.0.0.66", via: .announcement), wanted: true)
    #expect(book.all.count == 1)
    #expect(book.all.first?.address == "10.0.0.2")
    // The same key written otherwise (lower case) is the same device.
    book.note(
      sighting("Phone", key: Self.key.lowercased(), at: "10.0.0.66", via: .answer), wanted: true)
    #expect(book.all.count == 1)
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

  @Test("failures back off 1, 2, 4, then 5 s; a cut starts over at 1 s and counts")
  func backoff() {
    var retry = LocalSendRetry()
    #expect(!retry.hadCut)
    #expect(
      [retry.failed(), retry.failed(), retry.failed(), retry.failed(), retry.failed()] == [
        1, 2, 4, 5, 5,
      ])
    retry.cutOff()
    #expect(retry.hadCut && retry.cuts == 1)
    #expect(retry.failed() == 1)
    #expect(retry.attempt == 8)
  }

  @Test("busy and no answer pass only after a cut; a refusal, a PIN or a wrong key never")
  func transient() {
    #expect(LocalSendSending.isTransient(.request(.unreachable("x")), afterCut: false))
    #expect(LocalSendSending.isTransient(.request(.failed("x")), afterCut: false))
    #expect(!LocalSendSending.isTransient(.busy, afterCut: false))
    #expect(LocalSendSending.isTransient(.busy, afterCut: true))
    #expect(!LocalSendSending.isTransient(.request(.timedOut), afterCut: false))
    for final in [
      LocalSendSendError.declined(""), .pinRequired, .tooManyPinAttempts,
      .request(.wrongCertificate("x")), .refused(413, ""),
    ] {
      #expect(!LocalSendSending.isTransient(final, afterCut: true), "\(final)")
    }
  }
}
