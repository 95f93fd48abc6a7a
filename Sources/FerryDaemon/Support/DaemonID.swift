import Ferry

/// The daemon's identifiers — of sends, questions and history entries: 16 random lower-case
/// hex digits, which the API, the CLI and the outbox's file names share. Any thread.
package enum DaemonID {
  /// A new identifier (64 random bits).
  package static func new() -> String {
    var generator = SystemRandomNumberGenerator()
    let value = generator.next() as UInt64
    return Hex.lowercase((0..<8).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) })
  }

  /// Whether `text` has an identifier's form (so that it can name a file), as bytes.
  package static func isValid(_ text: some StringProtocol) -> Bool {
    text.utf8.count == 16
      && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
  }
}
