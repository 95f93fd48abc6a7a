import Foundation

/// Where known peers were reached, and the addresses the user named: how a peer is found
/// again where discovery does not reach (another subnet, a VLAN, a tunnel). An address never
/// stands for a key: whatever answers there proves its key in the TLS handshake.
extension KnownPeers {
  /// One address the user named (`ferry peers add NAME HOST:PORT`), with the key it belongs
  /// to once known (given, or learnt at the first contact).
  public struct NamedAddress: Codable, Hashable, Sendable {
    /// The name the user gave it; unique, whatever its letter case.
    public var name: String
    /// `HOST:PORT`.
    public var address: String
    /// The receiver's fingerprint (64 hex digits); nil until the first contact.
    public var fingerprint: String?
    /// When it was added.
    public var added: Date

    /// A named address.
    public init(name: String, address: String, fingerprint: String?, added: Date) {
      self.name = name
      self.address = address
      self.fingerprint = fingerprint
      self.added = added
    }
  }

  /// The most addresses remembered for one peer: the ones it was reached at most recently.
  public static let maximumAddresses = 4
  /// The most named addresses kept.
  public static let maximumNamedAddresses = 64
  /// The longest name of a named address, in UTF-8 bytes.
  public static let maximumNameBytes = 64

  /// Records that the known peer `fingerprint` was reached as a receiver at `addresses` (each
  /// `HOST:PORT`; others, and link-local addresses, are left out) on `date`: they go first, the ones remembered before
  /// after them, at most ``maximumAddresses``. A peer not known yet is not added (record it
  /// seen first: ``recordSeen(_:at:)``).
  ///
  /// - Throws: ``IdentityError`` when the file cannot be read, parsed or written.
  public func recordReached(
    _ fingerprint: Fingerprint, at addresses: [String], on date: Date = Date()
  ) throws(IdentityError) {
    // Not a link-local address: an IPv6 one's zone names an interface of this machine, and
    // neither crosses a router.
    let valid = addresses.compactMap(HostPort.init).filter {
      !$0.host.lowercased().hasPrefix("fe80:") && !$0.host.hasPrefix("169.254.")
    }.map(\.description)
    guard !valid.isEmpty else { return }
    try update { peers, _ in
      guard let index = peers.firstIndex(where: { $0.fingerprint == fingerprint.hexString })
      else { return }
      var merged: [String] = []
      for address in valid + (peers[index].addresses ?? []) where !merged.contains(address) {
        merged.append(address)
      }
      peers[index].addresses = Array(merged.prefix(Self.maximumAddresses))
      peers[index].reachedAt = date
    }
  }

  /// Forgets that `fingerprint` was reached at `address` (another key answers there now);
  /// returns whether it was remembered.
  ///
  /// - Throws: ``IdentityError`` when the file cannot be read, parsed or written.
  @discardableResult
  public func forgetAddress(_ address: String, of fingerprint: Fingerprint) throws(IdentityError)
    -> Bool
  {
    var removed = false
    try update { peers, _ in
      guard let index = peers.firstIndex(where: { $0.fingerprint == fingerprint.hexString }),
        let addresses = peers[index].addresses, addresses.contains(address)
      else { return }
      removed = true
      let left = addresses.filter { $0 != address }
      peers[index].addresses = left.isEmpty ? nil : left
    }
    return removed
  }

  /// Every named address, in the order they were added.
  ///
  /// - Throws: ``IdentityError`` when the file exists but cannot be read or parsed.
  public func namedAddresses() throws(IdentityError) -> [NamedAddress] {
    try load().named ?? []
  }

  /// The named address called `name` (letter case and surrounding spaces ignored), if any.
  ///
  /// - Throws: ``IdentityError`` when the file exists but cannot be read or parsed.
  public func namedAddress(_ name: String) throws(IdentityError) -> NamedAddress? {
    let wanted = Self.nameKey(name)
    return try namedAddresses().first { Self.nameKey($0.name) == wanted }
  }

  /// Names `address` (`HOST:PORT`) `name`, replacing a named address of that name; with
  /// `fingerprint`, the receiver there must prove that key.
  ///
  /// - Throws: ``NamedAddressError`` for a name or address that cannot be used, or when
  ///   ``maximumNamedAddresses`` are named already; ``IdentityError`` when the file cannot be
  ///   read, parsed or written.
  public func addNamed(_ name: String, address: String, fingerprint: Fingerprint?) throws
    -> NamedAddress
  {
    let trimmed = name.trimmingCharacters(in: .whitespaces)
    guard !trimmed.isEmpty, trimmed.utf8.count <= Self.maximumNameBytes,
      !DisplayText.hasHiddenCharacters(trimmed),
      // Hexadecimal digits alone stand for a fingerprint wherever a peer is named.
      Fingerprint.prefixLength(of: trimmed) == nil
    else { throw NamedAddressError.invalidName(name) }
    guard let parsed = HostPort(address) else { throw NamedAddressError.invalidAddress(address) }
    let entry = NamedAddress(
      name: trimmed, address: parsed.description, fingerprint: fingerprint?.hexString,
      added: Date())
    var full = false
    try updateFile { file, _ in
      var named = (file.named ?? []).filter { Self.nameKey($0.name) != Self.nameKey(trimmed) }
      guard named.count < Self.maximumNamedAddresses else {
        full = true
        return
      }
      named.append(entry)
      file.named = named
    }
    if full { throw NamedAddressError.tooMany }
    return entry
  }

  /// Removes the named address `name`; returns whether there was one.
  ///
  /// - Throws: ``IdentityError`` when the file cannot be read, parsed or written.
  @discardableResult
  public func removeNamed(_ name: String) throws(IdentityError) -> Bool {
    var removed = false
    try updateFile { file, _ in
      let before = file.named?.count ?? 0
      file.named?.removeAll { Self.nameKey($0.name) == Self.nameKey(name) }
      removed = (file.named?.count ?? 0) != before
    }
    return removed
  }

  /// Records the key the receiver at the named address `name` proved at the first contact,
  /// unless it has one already (a key, once named, changes only by the user).
  ///
  /// - Throws: ``IdentityError`` when the file cannot be read, parsed or written.
  public func learnKey(_ fingerprint: Fingerprint, ofNamed name: String) throws(IdentityError) {
    let wanted = Self.nameKey(name)
    try updateFile { file, _ in
      guard let index = file.named?.firstIndex(where: { Self.nameKey($0.name) == wanted }),
        file.named?[index].fingerprint == nil
      else { return }
      file.named?[index].fingerprint = fingerprint.hexString
    }
  }

  /// A name as named addresses are matched: trimmed, lower-cased.
  private static func nameKey(_ name: String) -> String {
    name.trimmingCharacters(in: .whitespaces).lowercased()
  }
}

/// Why a named address cannot be added.
public enum NamedAddressError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The name is empty, longer than ``KnownPeers/maximumNameBytes``, holds invisible
  /// characters, or is hexadecimal digits only (which would read as a fingerprint).
  case invalidName(String)
  /// The address is not `HOST:PORT`.
  case invalidAddress(String)
  /// ``KnownPeers/maximumNamedAddresses`` are named already.
  case tooMany

  /// What went wrong, for people.
  public var description: String {
    switch self {
    case .invalidName(let name):
      "'\(DisplayText.escaping(name))' cannot name an address: use 1 to "
        + "\(KnownPeers.maximumNameBytes) bytes of visible characters, not only hexadecimal digits "
        + "(those read as a fingerprint)"
    case .invalidAddress(let address):
      "'\(DisplayText.escaping(address))' is not HOST:PORT (a host name or IP address, "
        + "IPv6 in brackets, and a port from 1 to 65535)"
    case .tooMany:
      "\(KnownPeers.maximumNamedAddresses) addresses are named already: remove one first "
        + "('ferry peers remove NAME')"
    }
  }
}
