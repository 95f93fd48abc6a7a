import Crypto
import Foundation
import NIOCore
import Testing

@testable import Ferry

@Suite("Identity on disk")
struct IdentityTests {
  func temporaryHome() throws -> URL {
    let url = URL(fileURLWithPath: NSTemporaryDirectory())
      .appendingPathComponent("ferry-identity-\(UUID().uuidString)/home")
    return url
  }

  func mode(_ path: String) -> mode_t {
    var status = stat()
    stat(path, &status)
    return status.st_mode & 0o777
  }

  @Test("created on first use with private permissions, loaded identically afterwards")
  func createAndLoad() throws {
    let home = try temporaryHome()
    defer { try? FileManager.default.removeItem(at: home.deletingLastPathComponent()) }
    let first = try Identity.loadOrCreate(in: home)
    #expect(mode(home.path) == 0o700)
    #expect(mode(home.appendingPathComponent(Identity.keyFileName).path) == 0o600)
    #expect(mode(home.appendingPathComponent(Identity.certificateFileName).path) == 0o644)
    let second = try Identity.loadOrCreate(in: home)
    #expect(second.fingerprint == first.fingerprint)
    #expect(second.certificateDER == first.certificateDER)
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: home.path).filter {
      $0.contains(".tmp-")
    }
    #expect(leftovers.isEmpty)
  }

  @Test("the fingerprint equals openssl x509 -fingerprint -sha256 of the same certificate")
  func opensslFingerprint() throws {
    let home = try temporaryHome()
    defer { try? FileManager.default.removeItem(at: home.deletingLastPathComponent()) }
    let identity = try Identity.loadOrCreate(in: home)
    let output = try runTool(
      "/usr/bin/openssl",
      [
        "x509", "-noout", "-fingerprint", "-sha256", "-in",
        home.appendingPathComponent(Identity.certificateFileName).path,
      ])
    // "sha256 Fingerprint=AB:CD:..."
    let hex = try #require(output.split(separator: "=").last).trimmingCharacters(
      in: .whitespacesAndNewlines)
    #expect(try Fingerprint(parsing: hex) == identity.fingerprint)
    let text = try runTool(
      "/usr/bin/openssl",
      [
        "x509", "-noout", "-text", "-in",
        home.appendingPathComponent(Identity.certificateFileName).path,
      ])
    #expect(text.contains("ASN1 OID: prime256v1"))
    #expect(text.contains("TLS Web Server Authentication, TLS Web Client Authentication"))
    #expect(text.contains("CA:FALSE"))
  }

  @Test("a corrupted or half-missing identity is an error naming the file, never regenerated")
  func corrupted() throws {
    let home = try temporaryHome()
    defer { try? FileManager.default.removeItem(at: home.deletingLastPathComponent()) }
    let original = try Identity.loadOrCreate(in: home)
    let certificate = home.appendingPathComponent(Identity.certificateFileName).path
    let key = home.appendingPathComponent(Identity.keyFileName).path

    let saved = try Data(contentsOf: URL(fileURLWithPath: certificate))
    try Data("garbage".utf8).write(to: URL(fileURLWithPath: certificate))
    #expect(
      throws: IdentityError.corrupted(path: certificate, reason: "not an X.509 certificate in PEM")
    ) {
      try Identity.loadOrCreate(in: home)
    }
    try saved.write(to: URL(fileURLWithPath: certificate))

    let savedKey = try Data(contentsOf: URL(fileURLWithPath: key))
    try FileManager.default.removeItem(atPath: key)
    do {
      _ = try Identity.loadOrCreate(in: home)
      Issue.record("loaded without a key")
    } catch {
      #expect(error.description.contains(key))
    }
    // Another identity's key: valid PEM, wrong pair.
    let other = Identity.generate()
    try AtomicFile.write(Array(other.privateKey.pemRepresentation.utf8), to: key, mode: 0o600)
    do {
      _ = try Identity.loadOrCreate(in: home)
      Issue.record("loaded a mismatched pair")
    } catch {
      #expect(error.description.contains("does not match"))
    }
    try AtomicFile.write(Array(savedKey), to: key, mode: 0o600)
    #expect(try Identity.loadOrCreate(in: home).fingerprint == original.fingerprint)
  }

  @Test("a key readable by others is refused with the chmod to run")
  func permissions() throws {
    let home = try temporaryHome()
    defer { try? FileManager.default.removeItem(at: home.deletingLastPathComponent()) }
    _ = try Identity.loadOrCreate(in: home)
    let key = home.appendingPathComponent(Identity.keyFileName).path
    chmod(key, 0o644)
    #expect(throws: IdentityError.insecurePermissions(path: key, mode: 0o644)) {
      try Identity.loadOrCreate(in: home)
    }
    do {
      _ = try Identity.loadOrCreate(in: home)
    } catch {
      #expect(error.description.contains("chmod 600 \(key)"))
    }
  }

  @Test("FERRY_HOME, XDG_CONFIG_HOME and HOME decide the default directory, in that order")
  func defaultDirectory() throws {
    let output = try runTool(
      "/usr/bin/env",
      ["FERRY_HOME=/x/ferry", "XDG_CONFIG_HOME=/y", "/bin/sh", "-c", "echo $FERRY_HOME"])
    #expect(output.hasPrefix("/x/ferry"))
    // The logic itself, read from this process's environment:
    let expected: String
    if let home = ProcessInfo.processInfo.environment["FERRY_HOME"], !home.isEmpty {
      expected = home
    } else if let config = ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"], !config.isEmpty {
      expected = config + "/ferry"
    } else {
      expected = FileManager.default.homeDirectoryForCurrentUser.path + "/.config/ferry"
    }
    #expect(FerryHome.defaultDirectory.path == URL(fileURLWithPath: expected).path)
  }
}

@Suite("Verification code and known peers")
struct TrustTests {
  @Test("the code is six digits, the same at both ends, and changes with every input")
  func verificationCode() throws {
    let low = try Fingerprint(bytes: Array(repeating: 0x00, count: 32))
    let high = try Fingerprint(bytes: Array(repeating: 0xFF, count: 32))
    let other = try Fingerprint(bytes: Array(repeating: 0x80, count: 32))
    func code(
      _ first: Fingerprint, _ second: Fingerprint, keying: UInt8 = 1, inviter: UInt8 = 2,
      advertiser: UInt8 = 3
    ) -> VerificationCode {
      VerificationCode(
        keyingMaterial: Array(repeating: keying, count: 32),
        inviterNonce: Array(repeating: inviter, count: 32),
        advertiserNonce: Array(repeating: advertiser, count: 32), fingerprints: first, second)
    }
    let base = code(low, high)
    #expect(base == code(high, low), "each end passes its own fingerprint first")
    #expect(base.digits.count == 6)
    #expect(base.digits.allSatisfy { $0.isNumber })
    #expect(base.description.count == 7)
    // Fixed inputs whose codes all differ (checked with Python): each input counts.
    #expect(code(low, high, keying: 9) != base, "another TLS session")
    #expect(code(low, high, inviter: 3, advertiser: 2) != base, "the nonces' roles")
    #expect(code(low, high, inviter: 4) != base, "another inviter nonce")
    #expect(code(low, high, advertiser: 4) != base, "another advertiser nonce")
    #expect(code(low, other) != base && code(other, high) != base, "another key")
  }

  @Test("the code matches the documented derivation")
  func documentedDerivation() throws {
    let low = try Fingerprint(bytes: Array(repeating: 0x00, count: 32))
    let high = try Fingerprint(bytes: Array(repeating: 0xFF, count: 32))
    // SHA-256("ferry verification code v4" || K || Ni || Na || low || high), first 8 bytes
    // mod 1e6, computed independently (K = 32×01, Ni = 32×02, Na = 32×03).
    let script = """
      import hashlib
      d = hashlib.sha256(b'ferry verification code v4' + b'\\x01' * 32 + b'\\x02' * 32
                         + b'\\x03' * 32 + bytes(32) + b'\\xff' * 32).digest()
      print('%06d' % (int.from_bytes(d[:8], 'big') % 10**6))
      """
    let expected = try runTool("/usr/bin/python3", ["-c", script])
      .trimmingCharacters(in: .whitespacesAndNewlines)
    let code = VerificationCode(
      keyingMaterial: Array(repeating: 1, count: 32), inviterNonce: Array(repeating: 2, count: 32),
      advertiserNonce: Array(repeating: 3, count: 32), fingerprints: high, low)
    #expect(code.digits == expected)
    #expect(expected == "115425")
  }

  @Test("nonces are 32 fresh random bytes, and COMMIT is their SHA-256")
  func nonces() throws {
    let first = VerificationCode.makeNonce()
    let second = VerificationCode.makeNonce()
    #expect(first.count == 32 && second.count == 32 && first != second)
    let script =
      "import hashlib; print(hashlib.sha256(bytes.fromhex('\(Hex.lowercase(first))')).hexdigest())"
    let expected = try runTool("/usr/bin/python3", ["-c", script])
      .trimmingCharacters(in: .whitespacesAndNewlines)
    #expect(Hex.lowercase(VerificationCode.commitment(to: first)) == expected)
  }

  @Test("the TLS exporter: RFC 8446's derivation, from the key log's EXPORTER_SECRET only")
  func exporter() throws {
    let secret = (0..<32).map { UInt8($0) }
    // TLS-Exporter("EXPORTER-ferry verification code", "", 32) with SHA-256, computed
    // independently with HMAC (RFC 5869 HKDF-Expand, RFC 8446 §7.1 HkdfLabel).
    let script = """
      import hashlib, hmac
      def expand(key, info, n):
          out, block, i = b'', b'', 1
          while len(out) < n:
              block = hmac.new(key, block + info + bytes([i]), hashlib.sha256).digest()
              out, i = out + block, i + 1
          return out[:n]
      def label(key, name, context, n):
          full = b'tls13 ' + name
          return expand(key, n.to_bytes(2, 'big') + bytes([len(full)]) + full
                        + bytes([len(context)]) + context, n)
      empty = hashlib.sha256(b'').digest()
      derived = label(bytes(range(32)), b'EXPORTER-ferry verification code', empty, 32)
      print(label(derived, b'exporter', empty, 32).hex())
      """
    let expected = try runTool("/usr/bin/python3", ["-c", script])
      .trimmingCharacters(in: .whitespacesAndNewlines)
    let derived = TLSExporter.export(
      SHA256.self, secret: secret, label: VerificationCode.exporterLabel, length: 32)
    #expect(Hex.lowercase(derived) == expected)

    let exporter = TLSExporter()
    let random = String(repeating: "ab", count: 32)
    let traffic = String(repeating: "cd", count: 32)
    exporter.record(
      keyLogLine: ByteBuffer(string: "CLIENT_TRAFFIC_SECRET_0 \(random) \(traffic)\n"))
    #expect(exporter.keyingMaterial(label: VerificationCode.exporterLabel, length: 32) == nil)
    exporter.record(
      keyLogLine: ByteBuffer(string: "EXPORTER_SECRET \(random) \(Hex.uppercase(secret))\n"))
    #expect(
      exporter.keyingMaterial(label: VerificationCode.exporterLabel, length: 32) == derived)
    #expect(
      exporter.keyingMaterial(label: VerificationCode.exporterLabel, length: 32) == nil,
      "the secret is forgotten once used")
  }

  @Test("known peers: new, known, changed key under a pinned name, trust and forget, persisted")
  func knownPeers() throws {
    let directory = URL(fileURLWithPath: NSTemporaryDirectory())
      .appendingPathComponent("ferry-peers-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = KnownPeers(directory: directory)
    let alice = try PeerID(displayName: "alice", fingerprint: Identity.generate().fingerprint)
    let impostor = try PeerID(displayName: "alice", fingerprint: Identity.generate().fingerprint)
    #expect(try store.status(of: alice) == .new)
    try store.recordSeen(alice)
    #expect(try store.status(of: alice) == .known(trusted: false))
    // A name merely seen is a label: another key under it is another machine.
    #expect(try store.status(of: impostor) == .new)
    // Trusting pins it: another key under it is a changed key.
    try store.trust(alice.fingerprint)
    #expect(try KnownPeers(directory: directory).status(of: alice) == .known(trusted: true))
    #expect(try store.status(of: impostor) == .changedKey(previous: alice.fingerprint))
    #expect(try store.all().map(\.name) == ["alice"])
    #expect(try store.forget(alice.fingerprint))
    #expect(try store.forget(alice.fingerprint) == false)
    #expect(try store.status(of: impostor) == .new)
  }

  @Test("two machines of one name are two known peers; a name given with ferry trust is pinned")
  func namesake() throws {
    let directory = URL(fileURLWithPath: NSTemporaryDirectory())
      .appendingPathComponent("ferry-peers-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = KnownPeers(directory: directory)
    let first = try PeerID(displayName: "vm", fingerprint: Identity.generate().fingerprint)
    let second = try PeerID(displayName: "vm", fingerprint: Identity.generate().fingerprint)
    try store.recordSeen(first)
    try store.recordSeen(second)
    // Whoever spoke last, each is itself.
    #expect(try store.status(of: first) == .known(trusted: false))
    #expect(try store.status(of: second) == .known(trusted: false))
    #expect(try store.all().map(\.name) == ["vm", "vm"])
    // One trusted: the name is pinned to it; the other, known or not, is flagged under it.
    try store.trust(first.fingerprint)
    try store.recordSeen(second)
    #expect(try store.status(of: first) == .known(trusted: true))
    #expect(try store.status(of: second) == .changedKey(previous: first.fingerprint))
    // Both trusted under that name: two pinned machines.
    try store.trust(second.fingerprint)
    #expect(try store.status(of: first) == .known(trusted: true))
    #expect(try store.status(of: second) == .known(trusted: true))
    // A name given with trust, for a key never seen.
    let desk = Identity.generate().fingerprint
    try store.trust(desk, name: "desk")
    let other = try PeerID(displayName: "desk", fingerprint: Identity.generate().fingerprint)
    #expect(try store.status(of: other) == .changedKey(previous: desk))
    let otherAsDESK = try PeerID(displayName: "DESK", fingerprint: other.fingerprint)
    #expect(try store.status(of: otherAsDESK) == .similarName(known: "desk", previous: desk))
  }

  @Test("a known key never passes under a trusted peer's name, nor takes it over")
  func knownKeyTakesAName() throws {
    let directory = URL(fileURLWithPath: NSTemporaryDirectory())
      .appendingPathComponent("ferry-peers-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = KnownPeers(directory: directory)
    let alice = try PeerID(displayName: "Alice", fingerprint: Identity.generate().fingerprint)
    let bob = try PeerID(displayName: "Bob", fingerprint: Identity.generate().fingerprint)
    try store.recordSeen(alice)
    try store.recordSeen(bob)
    try store.trust(alice.fingerprint)
    // Bob's key, now calling itself Alice (or a look-alike): not "known" under that name.
    let bobAsAlice = try PeerID(displayName: "Alice", fingerprint: bob.fingerprint)
    #expect(try store.status(of: bobAsAlice) == .changedKey(previous: alice.fingerprint))
    let bobAsAlike = try PeerID(displayName: "Alice\u{200B}", fingerprint: bob.fingerprint)
    #expect(
      try store.status(of: bobAsAlike) == .similarName(known: "Alice", previous: alice.fingerprint))
    // Seen again under that name, it keeps its own: the next time is flagged again.
    try store.recordSeen(bobAsAlice)
    #expect(try store.all().map(\.name).sorted() == ["Alice", "Bob"])
    #expect(try store.status(of: bobAsAlice) == .changedKey(previous: alice.fingerprint))
    // A name nobody pinned is taken up; a trusted peer keeps its pinned name.
    try store.recordSeen(try PeerID(displayName: "Robert", fingerprint: bob.fingerprint))
    try store.recordSeen(try PeerID(displayName: "Alicia", fingerprint: alice.fingerprint))
    #expect(try store.all().map(\.name).sorted() == ["Alice", "Robert"])
    // A short prefix resolves to trusted peers only.
    let prefix = String(bob.fingerprint.hexString.prefix(8))
    #expect(try store.fingerprints(startingWith: prefix, trustedOnly: true).isEmpty)
    try store.trust(bob.fingerprint)
    #expect(try store.fingerprints(startingWith: prefix, trustedOnly: true) == [bob.fingerprint])
  }

  @Test("peers.json keeps every trusted peer and the 256 seen last; others' changes are read")
  func boundedPeers() throws {
    let directory = URL(fileURLWithPath: NSTemporaryDirectory())
      .appendingPathComponent("ferry-peers-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let store = KnownPeers(directory: directory)
    let start = Date(timeIntervalSince1970: 1_700_000_000)
    let trusted = Identity.generate().fingerprint
    try store.trust(trusted, name: "old friend")
    var seen: [Fingerprint] = []
    for index in 0..<(KnownPeers.maximumSeenPeers + 10) {
      // Fingerprints need not be real keys here: distinct 32-byte values.
      let fingerprint = try Fingerprint(parsing: String(format: "%064lX", index + 1))
      seen.append(fingerprint)
      try store.recordSeen(
        PeerID(displayName: "guest \(index)", fingerprint: fingerprint),
        at: start.addingTimeInterval(Double(index)))
    }
    let all = try store.all()
    #expect(all.count == KnownPeers.maximumSeenPeers + 1)
    #expect(all.contains { $0.fingerprint == trusted.hexString && $0.trusted })
    // The ten seen first are gone; the last one is there.
    #expect(!all.contains { $0.fingerprint == seen[9].hexString })
    #expect(all.contains { $0.fingerprint == seen[10].hexString })
    #expect(try store.status(of: PeerID(displayName: "x", fingerprint: seen[0])) == .new)
    // Another process (another instance) trusts a peer: this one sees it at once.
    let other = KnownPeers(directory: directory)
    let guest = try PeerID(displayName: "guest 20", fingerprint: seen[20])
    #expect(try store.status(of: guest) == .known(trusted: false))
    try other.trust(seen[20])
    #expect(try store.status(of: guest) == .known(trusted: true))
  }

  @Test("a corrupted peers file is an error naming it")
  func corruptedPeers() throws {
    let directory = URL(fileURLWithPath: NSTemporaryDirectory())
      .appendingPathComponent("ferry-peers-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let store = KnownPeers(directory: directory)
    try Data("{not json".utf8).write(to: URL(fileURLWithPath: store.path))
    #expect(throws: IdentityError.corrupted(path: store.path, reason: "not a Ferry peers file")) {
      try store.all()
    }
  }
}

/// Runs a tool and returns its standard output.
func runTool(_ path: String, _ arguments: [String]) throws -> String {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: path)
  process.arguments = arguments
  let pipe = Pipe()
  process.standardOutput = pipe
  try process.run()
  let data = pipe.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  return String(decoding: data, as: UTF8.self)
}
