import Ferry

/// A random fingerprint: discovery only carries it, so any 32 bytes do.
func randomFingerprint() -> Fingerprint {
  try! Fingerprint(bytes: (0..<32).map { _ in UInt8.random(in: 0...255) })
}

/// A peer with a random fingerprint and a name unique to this run.
func testPeer(_ prefix: String) -> PeerID {
  try! PeerID(
    displayName: "\(prefix)-\(Int.random(in: 1000...9999))", fingerprint: randomFingerprint())
}

extension BrowserEvent {
  /// Whether this is `.found` for a peer named `name`.
  func isFound(_ name: String) -> Bool {
    if case .found(let peer) = self { return peer.name == name }
    return false
  }

  /// Whether this is `.lost` for a peer named `name`.
  func isLost(_ name: String) -> Bool {
    if case .lost(let peer) = self { return peer.name == name }
    return false
  }
}

/// Lines of `avahi-browse -rpt TYPE` that resolved ('=' lines), split into their fields:
/// `=;iface;proto;name;type;domain;host;address;port;txt`, with the service name unescaped.
func avahiBrowse(_ type: ServiceType) async throws -> [[String]] {
  let result = try await run("/usr/bin/avahi-browse", ["-rpt", type.dnsSDType])
  return result.stdout.split(separator: "\n").filter { $0.hasPrefix("=") }.map {
    var fields = $0.split(separator: ";", maxSplits: 9, omittingEmptySubsequences: false).map(
      String.init)
    fields[3] = unescapeAvahiName(fields[3])
    return fields
  }
}

/// Undoes avahi-browse's escaping of service names: `\DDD` (decimal byte) and `\c`.
func unescapeAvahiName(_ text: String) -> String {
  var bytes: [UInt8] = []
  var input = Array(text.utf8)[...]
  while let byte = input.popFirst() {
    guard byte == UInt8(ascii: "\\"), !input.isEmpty else {
      bytes.append(byte)
      continue
    }
    let digits = input.prefix(3)
    if digits.count == 3, digits.allSatisfy({ (48...57).contains($0) }),
      let value = UInt8(String(decoding: digits, as: UTF8.self))
    {
      bytes.append(value)
      input = input.dropFirst(3)
    } else {
      bytes.append(input.popFirst()!)
    }
  }
  return String(decoding: bytes, as: UTF8.self)
}

/// Polls `avahi-browse` until `condition` holds for its resolved lines (or `timeout` passes);
/// returns the last lines seen.
func avahiBrowse(
  _ type: ServiceType, until condition: ([[String]]) -> Bool, timeout: Duration = Harness.patience
) async throws -> [[String]] {
  let deadline = ContinuousClock.now + timeout
  var lines = try await avahiBrowse(type)
  while !condition(lines) && ContinuousClock.now < deadline {
    try await Task.sleep(for: .milliseconds(200))
    lines = try await avahiBrowse(type)
  }
  return lines
}
