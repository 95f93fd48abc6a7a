/// Hexadecimal text for digests and fingerprints, as `sha256sum` and `openssl dgst` (lowercase)
/// or `openssl x509 -fingerprint` (uppercase) print them.
public enum Hex {
  /// `bytes` as lowercase hexadecimal, two digits per byte.
  public static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
    encode(bytes, digits: "0123456789abcdef")
  }

  /// `bytes` as uppercase hexadecimal, two digits per byte.
  public static func uppercase(_ bytes: some Sequence<UInt8>) -> String {
    encode(bytes, digits: "0123456789ABCDEF")
  }

  private static func encode(_ bytes: some Sequence<UInt8>, digits: StaticString) -> String {
    var text: [UInt8] = []
    text.reserveCapacity(bytes.underestimatedCount * 2)
    digits.withUTF8Buffer { digits in
      for byte in bytes {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0xF)])
      }
    }
    return String(decoding: text, as: UTF8.self)
  }
}
