import Ferry
import Foundation
import Testing

/// `ferry identity`, `peers`, `trust`, `forget`, and how `receive` shows invitations.
@Suite("ferry identity and known peers", .timeLimit(.minutes(3)), .endsItsProcesses)
struct CLIIdentityTests {
  @Test("identity is created once, persists, and matches openssl's fingerprint")
  func identity() async throws {
    let home = Harness.freshFerryHome()
    let environment = ["FERRY_HOME": home]
    let first = try await run(
      Harness.ferryBinary, ["identity", "--json"], environment: environment)
    #expect(first.status == 0, "\(first.stderr)")
    let event = try #require(jsonObject(first.stdout.trimmingCharacters(in: .newlines)))
    let fingerprint = try #require(event["fingerprint"] as? String)
    let second = try await run(
      Harness.ferryBinary, ["identity", "--json"], environment: environment)
    #expect(
      jsonObject(second.stdout.trimmingCharacters(in: .newlines))?["fingerprint"] as? String
        == fingerprint)

    let openssl = try await run(
      "/usr/bin/openssl",
      [
        "x509", "-noout", "-fingerprint", "-sha256", "-in",
        "\(home)/\(Identity.certificateFileName)",
      ])
    let hex = try #require(openssl.stdout.split(separator: "=").last)
    #expect(
      try Fingerprint(parsing: hex.trimmingCharacters(in: .whitespacesAndNewlines)).hexString
        == fingerprint)

    let human = try await run(Harness.ferryBinary, ["identity"], environment: environment)
    #expect(human.stdout.contains("Fingerprint: "))
    #expect(human.stdout.contains(try Fingerprint(parsing: fingerprint).description))
  }

  @Test("a corrupted identity exits 5 naming the file, and is left as it was")
  func corruptedIdentity() async throws {
    let home = Harness.freshFerryHome()
    let environment = ["FERRY_HOME": home]
    _ = try await run(Harness.ferryBinary, ["identity"], environment: environment)
    let certificate = "\(home)/\(Identity.certificateFileName)"
    try Data("-----BEGIN CERTIFICATE-----\nnope\n".utf8).write(
      to: URL(fileURLWithPath: certificate))
    let result = try await run(Harness.ferryBinary, ["identity"], environment: environment)
    #expect(result.status == 5)
    #expect(result.stderr.contains(certificate))
    #expect(result.stderr.contains("corrupted"))
    #expect(try String(contentsOfFile: certificate, encoding: .utf8).contains("nope"))
  }

  @Test("trust, peers, forget by full fingerprint and by unique prefix")
  func trustAndForget() async throws {
    let environment = ["FERRY_HOME": Harness.freshFerryHome()]
    let alice = Identity.generate().fingerprint
    let bob = Identity.generate().fingerprint
    #expect(
      try await run(
        Harness.ferryBinary, ["trust", alice.description, "--name", "alice"],
        environment: environment
      ).status == 0)
    #expect(
      try await run(
        Harness.ferryBinary, ["trust", bob.hexString, "--name", "bob"], environment: environment
      ).status == 0)
    let listed = try await run(Harness.ferryBinary, ["peers", "--json"], environment: environment)
    let peers = listed.stdout.split(separator: "\n").compactMap { jsonObject(String($0)) }
    #expect(Set(peers.compactMap { $0["name"] as? String }) == ["alice", "bob"])
    #expect(peers.allSatisfy { $0["trusted"] as? Bool == true && $0["event"] as? String == "peer" })

    let unknown = try await run(Harness.ferryBinary, ["forget", "0000"], environment: environment)
    if !alice.hexString.hasPrefix("0000") && !bob.hexString.hasPrefix("0000") {
      #expect(unknown.status == 2)
      #expect(unknown.stderr.contains("no known peer"))
    }
    let prefix = String(alice.hexString.prefix(12))
    #expect(
      try await run(Harness.ferryBinary, ["forget", prefix], environment: environment).status == 0)
    let after = try await run(Harness.ferryBinary, ["peers", "--json"], environment: environment)
    #expect(!after.stdout.contains(alice.hexString))
    #expect(after.stdout.contains(bob.hexString))
    #expect(
      try await run(Harness.ferryBinary, ["trust", "not-hex"], environment: environment).status == 2
    )
  }
}

/// `ferry receive` showing invitations, against the loopback avahi-daemon.
@Suite(
  "ferry receive and invitations", .timeLimit(.minutes(3)), .needsLocalAvahi, .endsItsProcesses)
struct CLIReceiveInvitationTests {
  @Test(
    "receive shows the invitation with its code, warns loudly about a changed key, and --accept-from declines others"
  )
  func invitationShown() async throws {
    let home = Harness.freshFerryHome()
    let type = Harness.uniqueServiceType()
    // The receiver knows an 'alice' with another key.
    _ = try await run(
      Harness.ferryBinary, ["trust", Identity.generate().fingerprint.hexString, "--name", "alice"],
      environment: ["FERRY_HOME": home])
    let started = try await ReceiverProcess.start(
      [
        "--accept-from", "0000000000000000", "--dir", NSTemporaryDirectory(), "--service", type,
        "--name", "desk", "--json",
      ],
      bus: .harness, home: home)
    let (receiver, port) = (started.process, started.port)
    defer { receiver.signal(SIGKILL) }
    let fingerprint = try Fingerprint(parsing: try #require(started.fingerprint))

    let alice = try Session(identity: makeIdentity(), displayName: "alice")
    // The code is the connection's, known to the inviter before the decline.
    let codes = ShownCodes()
    do {
      _ = try await alice.invite(
        host: "127.0.0.1", port: UInt16(port), expecting: fingerprint,
        onVerificationCode: codes.record)
      Issue.record("receive accepted")
    } catch {
      guard case .declined(let reason) = error else {
        Issue.record("expected a decline, got \(error)")
        return
      }
      #expect(reason.contains("not an accepted sender"))
    }
    let shown = try #require(
      await receiver.waitForLine { $0.contains("\"invitation\"") }.flatMap { jsonObject($0.text) })
    #expect(shown["peer"] as? String == "alice")
    #expect(shown["status"] as? String == "KEY CHANGED")
    #expect(codes.all.count == 1, "shown before the decline")
    #expect(shown["code"] as? String == codes.all.first?.digits)
    #expect(
      await receiver.waitForLine(onStderr: true) { $0.contains("WARNING") } != nil,
      "\(receiver.stderr)")
  }
}
