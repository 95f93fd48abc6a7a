/// A unicast DNS-SD domain to browse besides the local network (`example.org`): a DNS name,
/// checked as bytes — labels of letters, digits, `-` and `_`, 1 to 63 bytes each, 253 in all,
/// no empty label (a trailing dot is dropped).
public struct BrowseDomain: Hashable, Sendable, CustomStringConvertible {
  /// The domain, lower-cased, without a trailing dot.
  public let name: String

  /// Checks `text`.
  ///
  /// - Throws: ``BrowseDomainError`` naming what is wrong.
  public init(_ text: String) throws(BrowseDomainError) {
    var bytes = Array(text.utf8)
    if bytes.last == UInt8(ascii: ".") { bytes.removeLast() }
    guard !bytes.isEmpty, bytes.count <= 253 else { throw BrowseDomainError(text) }
    let labels = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    for label in labels {
      guard (1...63).contains(label.count),
        label.allSatisfy({ byte in
          (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte)
            || (0x61...0x7A).contains(byte) || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "_")
        })
      else { throw BrowseDomainError(text) }
    }
    name = String(decoding: bytes, as: UTF8.self).lowercased()
  }

  /// The domain.
  public var description: String { name }
}

/// A text that is not a DNS domain name.
public struct BrowseDomainError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The text, as given.
  public let text: String

  init(_ text: String) {
    self.text = text
  }

  /// What is wrong, for people.
  public var description: String {
    "'\(DisplayText.escaping(text))' is not a DNS domain (labels of letters, digits, '-' and "
      + "'_', separated by dots, such as example.org)"
  }
}
