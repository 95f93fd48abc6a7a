import Ferry

/// The secrets of Ferry's HTTP servers (LocalSend sessions and tokens, the web links, the
/// daemon's page): unguessable tokens, and their comparison. Any thread.
package enum Secrets {
  /// An unguessable token (128 bits, hex): two draws from the system's generator (one
  /// getrandom(2) each, not one per byte).
  package static func token() -> String {
    var generator = SystemRandomNumberGenerator()
    let words = [generator.next() as UInt64, generator.next() as UInt64]
    return Hex.lowercase(
      words.flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> ($0 * 8)) } })
  }

  /// Whether `given` is `known`, byte for byte, compared in a time that depends on the lengths
  /// only (not on where they differ).
  package static func same(_ known: some StringProtocol, _ given: some StringProtocol) -> Bool {
    let (a, b) = (Array(known.utf8), Array(given.utf8))
    guard a.count == b.count else { return false }
    return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
  }
}
