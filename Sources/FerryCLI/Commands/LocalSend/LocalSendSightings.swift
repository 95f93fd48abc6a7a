import Ferry
import FerryLocalSend

/// The LocalSend devices heard while looking for one, by key: a device's `register` answer
/// (its certificate proved its key, at that address) is never replaced by a multicast claim of
/// the same key, and a flood of made-up devices cannot push out the one looked for.
struct LocalSendSightings {
  /// Devices kept besides the ones looked for.
  static let capacity = 256

  private(set) var byKey: [String: LocalSendSighting] = [:]

  /// Everything kept.
  var all: [LocalSendSighting] { Array(byKey.values) }

  /// Keeps `sighting`; `wanted` says whether it is one looked for (kept even when full).
  mutating func note(_ sighting: LocalSendSighting, wanted: Bool) {
    let key = Self.key(sighting.device.fingerprint)
    if let known = byKey[key], known.via == .register, sighting.via != .register { return }
    guard byKey[key] != nil || byKey.count < Self.capacity || wanted else { return }
    byKey[key] = sighting
  }

  /// A fingerprint as one key however it is written (case, spaces).
  static func key(_ fingerprint: String) -> String {
    (try? Fingerprint(parsing: fingerprint))?.hexString ?? fingerprint.uppercased()
  }
}
