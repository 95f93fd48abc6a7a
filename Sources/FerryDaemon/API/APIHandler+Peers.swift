import Ferry
import FerryAPI
import Foundation

extension APIHandler {
  package func trustPeer(_ input: Operations.trustPeer.Input) async throws
    -> Operations.trustPeer.Output
  {
    let (store, key) = try peer(input.path.fingerprint)
    var name: String?
    if case .json(let request) = input.body { name = request.name }
    if let name { try Self.check(name) }
    do {
      try store.trust(key, name: name)
      let entry = try store.all().first { $0.fingerprint == key.hexString }
      return .ok(
        .init(
          body: .json(
            .init(name: entry?.name ?? name ?? "unnamed", fingerprint: key.hexString, trusted: true)
          )))
    } catch {
      throw APIProblem(500, "peers-file", "the peers file cannot be written: \(error.description)")
    }
  }

  package func forgetPeer(_ input: Operations.forgetPeer.Input) async throws
    -> Operations.forgetPeer.Output
  {
    let (store, key) = try peer(input.path.fingerprint)
    let forgotten: Bool
    do {
      forgotten = try store.forget(key)
    } catch {
      throw APIProblem(500, "peers-file", "the peers file cannot be written: \(error.description)")
    }
    guard forgotten else { throw APIProblem.notFound("no known peer has the key \(key.hexString)") }
    return .ok(.init(body: .json(.init(fingerprint: key.hexString))))
  }

  /// The store and the whole key `text` names (64 hex digits, either case).
  ///
  /// - Throws: ``APIProblem``: 400 for anything but a whole key, 503 without a store.
  private func peer(_ text: String) throws -> (KnownPeers, Fingerprint) {
    guard let store = parts.knownPeers else {
      throw APIProblem(503, "unavailable", "this daemon does not keep peers")
    }
    guard text.utf8.count == 64, text.utf8.allSatisfy({ $0.isHexDigit }),
      let key = try? Fingerprint(parsing: text)
    else {
      throw APIProblem.badRequest("a peer is named by its whole key: 64 hex digits")
    }
    return (store, key)
  }

  /// A name to remember a peer by: 1 to 256 bytes of UTF-8, not blank, no control character
  /// (C0, DEL, C1), no format character (Cf: bidirectional controls, zero-width characters) and
  /// no line or paragraph separator — it is shown on terminals and pages.
  ///
  /// - Throws: ``APIProblem`` (400) saying what is wrong.
  static func check(_ name: String) throws {
    guard (1...256).contains(name.utf8.count) else {
      throw APIProblem.badRequest("a name is 1 to 256 bytes")
    }
    guard !name.unicodeScalars.allSatisfy({ $0.properties.isWhitespace }) else {
      throw APIProblem.badRequest("a name is not blank")
    }
    let refused = name.unicodeScalars.contains { scalar in
      scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value) || scalar.value == 0x2028
        || scalar.value == 0x2029 || scalar.properties.generalCategory == .format
    }
    guard !refused else {
      throw APIProblem.badRequest(
        "a name has no control or format characters (bidirectional, zero-width) or line breaks")
    }
  }
}

extension UInt8 {
  /// Whether it is an ASCII hex digit.
  fileprivate var isHexDigit: Bool {
    (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
  }
}
