/// Hexadecimal text for digests, as `sha256sum` and `openssl dgst` print them.
public enum Hex {
  /// `bytes` as lowercase hexadecimal, two digits per byte.
  public static func lowercase(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(bytes.underestimatedCount * 2)
    for byte in bytes {
      text.append(digits[Int(byte >> 4)])
      text.append(digits[Int(byte & 0xF)])
    }
    return String(decoding: text, as: UTF8.self)
  }
}
