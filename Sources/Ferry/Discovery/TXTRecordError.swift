/// Why discovery info cannot be published.
public enum TXTRecordError: Error, Hashable, Sendable, CustomStringConvertible {
  /// A key is empty.
  case emptyKey
  /// A key contains `=`, which separates key from value. The key is given escaped.
  case keyContainsEquals(String)
  /// A key holds a character outside printable ASCII (RFC 6763 §6.4). The key is given escaped.
  case keyNotPrintableASCII(String)
  /// A key is `v` or `fp`, which Ferry sets itself.
  case reservedKey(String)
  /// Two keys differ only in case; TXT keys are case-insensitive.
  case duplicateKey(String)
  /// `key=value` is longer than 255 bytes.
  case entryTooLong(key: String, byteCount: Int)
  /// The whole record is longer than 1300 bytes.
  case recordTooLong(byteCount: Int)

  /// A one-line explanation naming the rule.
  public var description: String {
    switch self {
    case .emptyKey:
      return "invalid discovery info: a key is empty"
    case .keyContainsEquals(let key):
      return "invalid discovery info key \"\(key)\": keys cannot contain '='"
    case .keyNotPrintableASCII(let key):
      return "invalid discovery info key \"\(key)\": keys must be printable ASCII (RFC 6763 §6.4)"
    case .reservedKey(let key):
      return "invalid discovery info key \"\(key)\": 'v' and 'fp' are reserved for Ferry"
    case .duplicateKey(let key):
      return "invalid discovery info key \"\(key)\": keys are case-insensitive and this one repeats"
    case .entryTooLong(let key, let count):
      return
        "invalid discovery info for key \"\(escaped(key))\": key=value is \(count) bytes; the "
        + "limit is \(DiscoveryInfo.maximumEntryBytes)"
    case .recordTooLong(let count):
      return
        "invalid discovery info: the TXT record would be \(count) bytes; the limit is "
        + "\(DiscoveryInfo.maximumRecordBytes) (RFC 6763 §6.2)"
    }
  }
}
