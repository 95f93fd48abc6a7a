import NIOHTTP1
import Testing

@testable import FerryLocalSend

/// The web link's wrong-token limit as an attacker with many addresses meets it.
@Suite("The web link's wrong-token limit")
struct WebGateTests {
  private static func gate() -> WebGate {
    WebGate(
      LocalSendWebAccess(
        token: LocalSendWebAccess.newToken(), expires: .now + .seconds(600)))
  }

  private static func guess(_ gate: WebGate, from address: String) -> HTTPResponseStatus? {
    let verdict = gate.verdict(
      method: .GET, path: "/r/00000000000000000000000000000000", headers: [:], address: address)
    guard case .serve(let status, _, _) = verdict else { return nil }
    return status
  }

  @Test("one address is refused after its 20 wrong tokens; another is not")
  func oneAddress() {
    let gate = Self.gate()
    for _ in 0..<LocalSendWebAccess.wrongTokensPerAddress {
      #expect(Self.guess(gate, from: "10.0.0.1") == .notFound)
    }
    #expect(Self.guess(gate, from: "10.0.0.1") == .tooManyRequests)
    #expect(Self.guess(gate, from: "10.0.0.2") == .notFound)
    // Its right token still opens the page.
    #expect(Self.open(gate, from: "10.0.0.1") == .ok)
  }

  /// The page with the right token.
  private static func open(_ gate: WebGate, from address: String) -> HTTPResponseStatus? {
    let verdict = gate.verdict(
      method: .GET, path: gate.access.pagePath, headers: [:], address: address)
    guard case .serve(let status, _, _) = verdict else { return nil }
    return status
  }

  @Test("past the addresses remembered, new addresses share one count and are refused")
  func manyAddresses() {
    let gate = Self.gate()
    for index in 0..<WebGate.rememberedAddresses {
      _ = Self.guess(gate, from: "fd00::\(String(index, radix: 16))")
    }
    var refused = false
    for index in 0..<(LocalSendWebAccess.wrongTokensPerAddress + 1) {
      if Self.guess(gate, from: "fd01::\(String(index, radix: 16))") == .tooManyRequests {
        refused = true
      }
    }
    #expect(refused, "fresh addresses past the list guess on without limit")
    // The addresses counted one by one keep their own count.
    #expect(Self.guess(gate, from: "fd00::0") == .notFound)
    // A person's browser at a fresh address, with the link, is not locked out.
    #expect(Self.open(gate, from: "fd02::1") == .ok)
  }
}
