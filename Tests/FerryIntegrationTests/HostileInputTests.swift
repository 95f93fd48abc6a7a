import Ferry
import FerryWire
import Foundation
import Testing

/// Clients we did not write (OpenSSL) and clients that misbehave, against a listening
/// Advertiser. Each bad connection must be dropped alone: the process keeps running and a
/// proper invitation afterwards succeeds.
@Suite(
  "Hostile and foreign clients", .timeLimit(.minutes(3)), .needsLocalAvahi, .serialized,
  .endsItsProcesses)
struct HostileInputTests {
  /// Writes bytes to a temporary file (for a child's standard input).
  func file(_ bytes: [UInt8]) throws -> String {
    let path = NSTemporaryDirectory() + "ferry-bytes-\(UUID().uuidString)"
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    return path
  }

  /// Checks that the advertiser still works: a proper invitation is accepted.
  func properInvitationSucceeds(_ advertiser: Advertiser, _ session: Session, _ identity: Identity)
    async throws
  {
    let inviter = try Session(identity: makeIdentity(), displayName: "proper")
    let accepting = Task {
      while let invitation = await nextInvitation(advertiser) {
        if invitation.peer.displayName == "proper" {
          try await invitation.accept(into: session)
          return
        }
      }
    }
    let peer = try await inviter.invite(
      host: "127.0.0.1", port: advertiser.port, expecting: identity.fingerprint,
      timeout: Harness.patience)
    #expect(peer.fingerprint == identity.fingerprint)
    try await accepting.value
    withExtendedLifetime(inviter) {}
  }

  @Test(
    "openssl s_client with a certificate completes TLS 1.3; the advertiser learns its fingerprint")
  func opensslClient() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let (advertiser, _, _) = try await startAdvertiser("tls-peer", type: type)
    defer { advertiser.stop() }
    let credentials = try await opensslCredentials()
    // Sent blindly: the INVITE does not wait for the COMMIT here (which only a client that
    // wants the code to mean something must do).
    let frames =
      ControlMessage.hello(versions: WireProtocol.supportedVersions, displayName: "openssl")
      .frame.encoded
      + ControlMessage.invite(
        timeoutMilliseconds: 60_000, nonce: Array(repeating: 1, count: 32),
        context: Array("from openssl".utf8)
      ).frame.encoded
    let client = try ChildProcess(
      "/usr/bin/openssl",
      [
        "s_client", "-connect", "127.0.0.1:\(advertiser.port)", "-tls1_3", "-cert",
        credentials.certificate, "-key", credentials.key, "-quiet",
      ],
      stdin: try file(frames))
    defer { client.signal(SIGKILL) }
    let invitation = try #require(await nextInvitation(advertiser), "\(client.stderr)")
    #expect(invitation.fingerprint == credentials.fingerprint)
    #expect(invitation.peer.displayName == "openssl")
    #expect(invitation.context == Array("from openssl".utf8))
    invitation.decline(reason: "no thanks, openssl")
    #expect(await client.waitForExit() != nil)
    #expect(client.stdout.contains("no thanks, openssl"))
  }

  @Test("openssl s_client without a certificate is refused before any application byte")
  func opensslClientWithoutCertificate() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let (advertiser, session, identity) = try await startAdvertiser("strict", type: type)
    defer { advertiser.stop() }
    let frames =
      ControlMessage.hello(versions: WireProtocol.supportedVersions, displayName: "anonymous")
      .frame.encoded
      + ControlMessage.invite(
        timeoutMilliseconds: 10_000, nonce: Array(repeating: 1, count: 32), context: []
      ).frame.encoded
    let client = try ChildProcess(
      "/usr/bin/openssl",
      ["s_client", "-connect", "127.0.0.1:\(advertiser.port)", "-tls1_3", "-quiet"],
      stdin: try file(frames))
    defer { client.signal(SIGKILL) }
    let status = await client.waitForExit()
    #expect(status != nil && status != 0)
    #expect(client.stderr.contains("certificate required"), "\(client.stderr)")
    #expect(await nextInvitation(advertiser, timeout: .seconds(1)) == nil)
    try await properInvitationSucceeds(advertiser, session, identity)
  }

  @Test(
    "an advertiser speaking only a future protocol version, or only versions whose code a man in the middle can grind (1 to 3): protocolVersionUnsupported",
    arguments: [[7, 8], [3, 2, 1]] as [[UInt16]])
  func unsupportedVersion(versions: [UInt16]) async throws {
    let credentials = try await opensslCredentials()
    let port = freeLoopbackPort()
    let hello = ControlMessage.hello(versions: versions, displayName: "future").frame.encoded
    let server = try ChildProcess(
      "/usr/bin/openssl",
      [
        "s_server", "-accept", "127.0.0.1:\(port)", "-tls1_3", "-cert", credentials.certificate,
        "-key", credentials.key, "-Verify", "1", "-quiet", "-naccept", "1",
        // ALPN names the protocol family across versions; versions are agreed in HELLO.
        "-alpn", FerryProtocol.alpn,
      ],
      stdin: try file(hello))
    defer { server.signal(SIGKILL) }
    try #require(await waitUntilListening(port: port), "openssl s_server: \(server.stderr)")
    let session = try Session(identity: makeIdentity(), displayName: "present")
    await #expect(throws: InvitationError.protocolVersionUnsupported(peerVersions: versions)) {
      try await session.invite(
        host: "127.0.0.1", port: port, expecting: credentials.fingerprint,
        timeout: Harness.patience)
    }
  }

  @Test(
    "random bytes, a plain-text line and a TLS client stalled after ClientHello are dropped",
    arguments: ["random", "text", "stalled-tls", "silent"])
  func garbage(kind: String) async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let (advertiser, session, identity) = try await startAdvertiser("sturdy", type: type)
    defer { advertiser.stop() }
    let socket = try RawSocket(port: advertiser.port)
    switch kind {
    case "random": socket.send((0..<4096).map { _ in UInt8.random(in: 0...255) })
    case "text": socket.send(Array("GET / HTTP/1.1\r\nHost: ferry\r\n\r\n".utf8))
    case "stalled-tls": socket.send(try await capturedClientHello())
    default: break
    }
    let started = ContinuousClock.now
    // Dropped at once, or at the 5 s handshake deadline; plus what a loaded machine adds.
    #expect(
      await socket.waitForClose(timeout: .seconds(5) + Harness.margin), "\(kind): not dropped")
    print("\(kind) connection dropped after \(seconds(.now - started)) s")
    try await properInvitationSucceeds(advertiser, session, identity)
  }

  @Test("100 concurrent idle connections are all dropped; then a proper invitation succeeds")
  func flood() async throws {
    let type = try ServiceType(Harness.uniqueServiceType())
    let (advertiser, session, identity) = try await startAdvertiser("flooded", type: type)
    defer { advertiser.stop() }
    let sockets = try (0..<100).map { _ in try RawSocket(port: advertiser.port) }
    for (index, socket) in sockets.enumerated() where index % 3 == 0 {
      socket.send([0x16, 0x03, 0x01])  // the start of a TLS record, then nothing
    }
    // Each is dropped 5 s (the handshake deadline) after it is accepted; under a loaded
    // machine the last accepts come late, so each gets 20 s.
    var dropped = 0
    for socket in sockets where await socket.waitForClose(timeout: .seconds(20)) {
      dropped += 1
    }
    #expect(dropped == 100)
    try await properInvitationSucceeds(advertiser, session, identity)
  }

  /// A genuine TLS 1.3 ClientHello, captured from `openssl s_client` by a listener of ours.
  /// The blocking accept/recv run on a thread of their own (never on Swift's small cooperative
  /// pool), with a receive timeout.
  func capturedClientHello() async throws -> [UInt8] {
    let (listener, port) = loopbackListener()
    defer { close(listener) }
    let client = try ChildProcess(
      "/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-tls1_3", "-quiet"])
    defer { client.signal(SIGKILL) }
    let hello: [UInt8] = await withCheckedContinuation { continuation in
      Thread.detachNewThread {
        var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        // Harness.patience, for openssl's start on a loaded machine.
        guard poll(&poller, 1, 60_000) > 0 else { return continuation.resume(returning: []) }
        let connection = accept(listener, nil, nil)
        defer { close(connection) }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(
          connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 5 || bytes.count < 5 + (Int(bytes[3]) << 8 | Int(bytes[4])) {
          let count = buffer.withUnsafeMutableBytes {
            recv(connection, $0.baseAddress, $0.count, 0)
          }
          guard count > 0 else { break }
          bytes += buffer[0..<count]
        }
        continuation.resume(returning: bytes)
      }
    }
    try #require(hello.first == 0x16, "not a TLS handshake record")
    return hello
  }
}
