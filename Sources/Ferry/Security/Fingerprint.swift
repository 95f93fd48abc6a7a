/// The SHA-256 digest of a peer's certificate (DER), which is the peer's real identity.
///
/// It is shown as upper-case hexadecimal in groups of four (`9F2C 41AB …`), the way users compare
/// it by eye, and carried without spaces in the `fp` TXT record.
public struct Fingerprint: Hashable, Sendable, CustomStringConvertible {
  /// Number of bytes in a SHA-256 digest.
  public static let byteCount = 32

  /// The fewest hexadecimal digits (64 bits) a fingerprint prefix must have to stand for a key
  /// on its own — to pin a connection or authorize a sender. Shorter prefixes can be forged: a
  /// key whose fingerprint starts with 8 given digits (32 bits) is found in hours on a laptop.
  /// A shorter prefix is accepted only where it names exactly one fingerprint already known.
  public static let minimumPrefixDigits = 16

  /// The 32 digest bytes.
  public let bytes: [UInt8]

  /// Wraps a digest.
  ///
  /// - Parameter bytes: Exactly 32 bytes.
  /// - Throws: ``FingerprintError/wrongLength(_:)`` for any other count.
  public init(bytes: [UInt8]) throws(FingerprintError) {
    guard bytes.count == Self.byteCount else { throw .wrongLength(bytes.count) }
    self.bytes = bytes
  }

  /// Parses a fingerprint written as 64 hexadecimal digits, in either case, optionally split by
  /// spaces or colons (the forms Ferry and `openssl x509 -fingerprint` print).
  ///
  /// - Throws: ``FingerprintError/notHexadecimal(_:)`` when a character is neither a hex digit
  ///   nor a separator, ``FingerprintError/wrongLength(_:)`` when the digits are not 32 bytes.
  public init(parsing text: String) throws(FingerprintError) {
    let digits = try Self.hexDigits(of: text)
    guard digits.count == Self.byteCount * 2 else { throw .wrongLength(digits.count / 2) }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(Self.byteCount)
    var index = digits.startIndex
    while index < digits.endIndex {
      bytes.append(digits[index] << 4 | digits[index + 1])
      index += 2
    }
    self.bytes = bytes
  }

  /// 64 upper-case hexadecimal digits with no separators, as published in the `fp` TXT record.
  public var hexString: String {
    Hex.uppercase(bytes)
  }

  /// Upper-case hexadecimal in groups of four, e.g. `9F2C 41AB 0C3D …` (16 groups).
  public var description: String {
    grouped(hexString)
  }

  /// The first four groups, e.g. `9F2C 41AB 0C3D 7E11`, enough to tell peers apart on a screen.
  public var shortDescription: String {
    grouped(String(hexString.prefix(16)))
  }

  /// Whether `prefix` (hex digits, any case, spaces and colons ignored) begins this fingerprint.
  /// An empty prefix matches nothing.
  public func hasPrefix(_ prefix: String) -> Bool {
    guard let digits = try? Self.hexDigits(of: prefix), !digits.isEmpty else { return false }
    let own = hexString.utf8.map { hexValue(of: $0)! }
    return digits.count <= own.count && own.starts(with: digits)
  }

  /// How many hexadecimal digits `text` holds if it can name a fingerprint by prefix (only hex
  /// digits, spaces and colons; at most 64 digits), or nil. `--to 9F2C41AB` is a prefix of 8.
  public static func prefixLength(of text: String) -> Int? {
    guard let digits = try? hexDigits(of: text), digits.count <= byteCount * 2 else { return nil }
    return digits.count
  }

  private static func hexDigits(of text: String) throws(FingerprintError) -> [UInt8] {
    var digits: [UInt8] = []
    for byte in text.utf8 {
      if byte == UInt8(ascii: " ") || byte == UInt8(ascii: ":") { continue }
      guard let value = hexValue(of: byte) else { throw .notHexadecimal(escaped(text)) }
      digits.append(value)
    }
    return digits
  }
}

private func hexValue(of byte: UInt8) -> UInt8? {
  switch byte {
  case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
  case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
  case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
  default: return nil
  }
}

private func grouped(_ hex: String) -> String {
  var groups: [Substring] = []
  var rest = Substring(hex)
  while !rest.isEmpty {
    groups.append(rest.prefix(4))
    rest = rest.dropFirst(4)
  }
  return groups.joined(separator: " ")
}
