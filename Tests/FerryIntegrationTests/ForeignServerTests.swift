import Ferry
import Foundation
import Testing

/// Inviting something that is not a Ferry advertiser — a web server, a TLS server that knows
/// nothing of Ferry, a closed port — fails at once, with words that say what is at the other end.
@Suite("Inviting what is not a Ferry peer", .timeLimit(.minutes(3)), .endsItsProcesses)
struct ForeignServerTests {
  /// `openssl s_server` on a free loopback port with a certificate of its own, accepting; with
  /// `-rev` it answers each line reversed, without reading its own standard input.
  func opensslServer(_ extra: [String]) async throws -> (
    server: ChildProcess, port: UInt16,
    credentials: (certificate: String, key: String, fingerprint: Fingerprint)
  ) {
    let credentials = try await opensslCredentials()
    let port = freeLoopbackPort()
    let server = try ChildProcess(
      "/usr/bin/openssl",
      [
        "s_server", "-accept", "127.0.0.1:\(port)", "-cert", credentials.certificate, "-key",
        credentials.key, "-tls1_3", "-rev",
      ] + extra)
    let accepting = await server.waitForText("ACCEPT")
    if !accepting { server.signal(SIGKILL) }
    try #require(accepting, "openssl s_server did not start: \(server.stderr)")
    return (server, port, credentials)
  }

  @Test("a closed port: unreachable, 'connection refused'")
  func closedPort() async throws {
    let session = try Session(identity: makeIdentity(), displayName: "x")
    let port = freeLoopbackPort()
    await #expect(
      throws: InvitationError.unreachable(
        address: "127.0.0.1:\(port)", reason: "connection refused")
    ) {
      try await session.invite(host: "127.0.0.1", port: port, timeout: .seconds(5))
    }
  }

  @Test("a web server: 'does not speak TLS', within seconds")
  func plainTCP() async throws {
    let server = OneShotServer(answer: Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8))
    let session = try Session(identity: makeIdentity(), displayName: "x")
    let started = ContinuousClock.now
    await #expect(
      throws: InvitationError.authenticationFailed(
        reason: "the other end does not speak TLS: it is not a Ferry peer")
    ) {
      try await session.invite(host: "127.0.0.1", port: server.port, timeout: .seconds(20))
    }
    #expect(ContinuousClock.now - started < .seconds(10))
  }

  @Test(
    "openssl s_server ignoring or refusing ALPN ferry/1: not Ferry's protocol, within seconds",
    arguments: [[String](), ["-alpn", "h2"]])
  func foreignTLS(alpn: [String]) async throws {
    let (server, port, _) = try await opensslServer(alpn)
    defer { server.signal(SIGKILL) }
    let session = try Session(identity: makeIdentity(), displayName: "x")
    let started = ContinuousClock.now
    do {
      _ = try await session.invite(host: "127.0.0.1", port: port, timeout: .seconds(20))
      Issue.record("openssl s_server was taken for a Ferry peer")
    } catch {
      guard case .authenticationFailed(let reason) = error else {
        Issue.record("expected authenticationFailed, got \(error)")
        return
      }
      #expect(reason.contains("not Ferry's protocol"), "\(reason)")
    }
    #expect(ContinuousClock.now - started < .seconds(10))
  }

  @Test("a TLS server with another key than the one named: its fingerprint is reported")
  func wrongKey() async throws {
    let (server, port, credentials) = try await opensslServer(["-alpn", FerryProtocol.alpn])
    defer { server.signal(SIGKILL) }
    let session = try Session(identity: makeIdentity(), displayName: "x")
    let expected = makeIdentity().fingerprint
    await #expect(
      throws: InvitationError.authenticationFailed(
        reason: "the other end's fingerprint is \(credentials.fingerprint.shortDescription)…, "
          + "not the expected \(expected.shortDescription)…")
    ) {
      try await session.invite(
        host: "127.0.0.1", port: port, expecting: expected, timeout: .seconds(20))
    }
  }
}
