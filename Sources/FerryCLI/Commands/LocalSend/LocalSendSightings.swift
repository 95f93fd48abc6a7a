import Ferry
import FerryLocalSend

/// The LocalSend devices heard while looking for one, by key and, for each key, by address: a
/// key claimed from another address (a replayed announcement) never hides the device that
/// holds it, a proven sighting (a TLS handshake proved the key at that address) is never
/// replaced by a claim, and a flood of made-up devices cannot push out the one looked for.
struct LocalSendSightings {
  /// Keys kept besides the ones looked for.
  static let capacity = 256
  /// Addresses kept for one key besides the ones looked for.
  static let addressesPerKey = 8

  private(set) var byKey: [String: [String: LocalSendSighting]] = [:]

  /// Everything kept.
  var all: [LocalSendSighting] { byKey.values.flatMap(\.values) }

  /// Keeps `sighting`; `wanted` says whether it is one looked for (kept even when full).
  mutating func note(_ sighting: LocalSendSighting, wanted: Bool) {
    let key = Self.key(sighting.device.fingerprint)
    if let known = byKey[key]?[sighting.address], known.proven, !sighting.proven { return }
    guard byKey[key] != nil || byKey.count < Self.capacity || wanted else { return }
    guard
      byKey[key]?[sighting.address] != nil
        || (byKey[key]?.count ?? 0) < Self.addressesPerKey || wanted
    else { return }
    byKey[key, default: [:]][sighting.address] = sighting
  }

  /// A fingerprint as one key however it is written (case, spaces).
  static func key(_ fingerprint: String) -> String {
    (try? Fingerprint(parsing: fingerprint))?.hexString ?? fingerprint.uppercased()
  }

  /// `sightings` of one device, in the order its addresses are worth trying: proven ones
  /// first, then IPv4 before IPv6, a link-local address without its zone (which cannot be
  /// reached) last.
  static func ordered(_ sightings: [LocalSendSighting]) -> [LocalSendSighting] {
    func rank(_ sighting: LocalSendSighting) -> Int {
      let address = sighting.address.lowercased()
      var rank = sighting.proven ? 0 : 10
      if address.contains(":") { rank += 1 }
      if address.hasPrefix("fe80:") && !address.contains("%") { rank += 5 }
      return rank
    }
    return sightings.sorted { (rank($0), $0.address) < (rank($1), $1.address) }
  }
}
