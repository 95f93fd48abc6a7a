/// What an advertiser publishes in its DNS-SD TXT record: Ferry's own keys (`v`, the protocol
/// version, and `fp`, the identity fingerprint) and the application's key/value pairs.
///
/// Encoding follows RFC 6763 §6: each entry is `key=value`, at most 255 bytes; keys are printable
/// ASCII without `=`, compared case-insensitively; values are any bytes (Ferry uses UTF-8 text and
/// may contain `=`).
public struct DiscoveryInfo: Hashable, Sendable {
  /// TXT key of the protocol version.
  public static let versionKey = "v"
  /// TXT key of the identity fingerprint.
  public static let fingerprintKey = "fp"
  /// Largest encoded entry, `key=value`, in bytes (one length byte in DNS).
  public static let maximumEntryBytes = 255
  /// Largest whole TXT record in bytes, length bytes included. RFC 6763 §6.2 advises against
  /// records over 1300 bytes so that they fit in one packet.
  public static let maximumRecordBytes = 1300

  /// The Ferry protocol version the peer speaks, or nil when the record has no valid `v`.
  public var protocolVersion: Int?
  /// The peer's identity fingerprint, or nil when the record has no valid `fp`.
  public var fingerprint: Fingerprint?
  /// The application's own pairs, with Ferry's keys removed.
  public var values: [String: String]

  /// Builds the record an advertiser publishes, checking every rule so that publishing cannot
  /// fail on it later.
  ///
  /// - Parameters:
  ///   - protocolVersion: Defaults to ``FerryProtocol/version``.
  ///   - fingerprint: The advertiser's identity fingerprint.
  ///   - values: The application's pairs.
  /// - Throws: ``TXTRecordError`` for an empty key, a key with `=` or a character outside
  ///   printable ASCII, a reserved or duplicate key, an entry over 255 bytes or a record over
  ///   1300 bytes.
  public init(
    protocolVersion: Int = FerryProtocol.version,
    fingerprint: Fingerprint,
    values: [String: String] = [:]
  ) throws(TXTRecordError) {
    self.protocolVersion = protocolVersion
    self.fingerprint = fingerprint
    self.values = values
    try validate()
  }

  /// Decodes a received TXT record. Decoding never fails: entries it cannot use are skipped, as
  /// RFC 6763 §6.4 asks (empty keys, duplicate keys after the first), `v` and `fp` that do not
  /// parse leave their fields nil, and bytes that are not UTF-8 are decoded with replacement
  /// characters.
  ///
  /// - Parameter entries: The raw entries, one per TXT string.
  public init(decoding entries: [[UInt8]]) {
    var seen = Set<String>()
    var version: Int?
    var fingerprint: Fingerprint?
    var values: [String: String] = [:]
    for entry in entries {
      let keyBytes = entry.prefix { $0 != UInt8(ascii: "=") }
      guard !keyBytes.isEmpty else { continue }
      let key = String(decoding: keyBytes, as: UTF8.self)
      guard seen.insert(key.lowercased()).inserted else { continue }
      let valueBytes = entry.dropFirst(keyBytes.count + 1)
      let value = String(decoding: valueBytes, as: UTF8.self)
      switch key.lowercased() {
      case Self.versionKey: version = Int(value)
      case Self.fingerprintKey: fingerprint = try? Fingerprint(parsing: value)
      default: values[key] = value
      }
    }
    self.protocolVersion = version
    self.fingerprint = fingerprint
    self.values = values
  }

  /// The entries to publish: `v`, then `fp`, then the application's pairs sorted by key.
  public var encodedEntries: [[UInt8]] {
    var entries: [[UInt8]] = []
    if let protocolVersion {
      entries.append(Array("\(Self.versionKey)=\(protocolVersion)".utf8))
    }
    if let fingerprint {
      entries.append(Array("\(Self.fingerprintKey)=\(fingerprint.hexString)".utf8))
    }
    for key in values.keys.sorted() {
      entries.append(Array("\(key)=\(values[key]!)".utf8))
    }
    return entries
  }

  /// Checks the rules ``init(protocolVersion:fingerprint:values:)`` enforces.
  ///
  /// - Throws: ``TXTRecordError`` for the first rule broken.
  public func validate() throws(TXTRecordError) {
    var seen: Set<String> = [Self.versionKey, Self.fingerprintKey]
    for key in values.keys.sorted() {
      if key.isEmpty {
        throw .emptyKey
      }
      if key.contains("=") {
        throw .keyContainsEquals(escaped(key))
      }
      if key.unicodeScalars.contains(where: { !$0.isASCII || $0.value < 0x20 || $0.value == 0x7F })
      {
        throw .keyNotPrintableASCII(escaped(key))
      }
      let folded = key.lowercased()
      if folded == Self.versionKey || folded == Self.fingerprintKey {
        throw .reservedKey(key)
      }
      if !seen.insert(folded).inserted {
        throw .duplicateKey(key)
      }
    }
    var total = 0
    for entry in encodedEntries {
      if entry.count > Self.maximumEntryBytes {
        let key = String(decoding: entry.prefix { $0 != UInt8(ascii: "=") }, as: UTF8.self)
        throw .entryTooLong(key: key, byteCount: entry.count)
      }
      total += entry.count + 1
    }
    if total > Self.maximumRecordBytes {
      throw .recordTooLong(byteCount: total)
    }
  }
}
