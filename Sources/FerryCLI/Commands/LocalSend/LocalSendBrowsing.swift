import Ferry
import FerryAgent
import FerryLocalSend
import Foundation
import Synchronization

/// `ferry browse --localsend`: LocalSend devices as LocalSend's discovery finds them (this
/// machine announces itself so that they answer), beside the Ferry peers, each once, with a
/// `peer-found` event whose `protocol` is "localsend".
final class LocalSendBrowsing: Sendable {
  let output: EventWriter
  let json: Bool
  /// How many devices were listed.
  private let count = Atomic(0)

  init(output: EventWriter, json: Bool) {
    self.output = output
    self.json = json
  }

  /// Devices listed so far.
  var found: Int { count.load(ordering: .relaxed) }

  /// Starts discovery as `identity`, named `name`; lists what it hears until `stop` is
  /// called on the returned lookout (or the process ends).
  ///
  /// - Throws: ``CLIFailure`` (`discovery-unavailable`) when no interface has multicast.
  func start(identity: Identity, name: String) async throws(CLIFailure) -> LocalSendLookout {
    let lookout = try await LocalSendLookout.start(identity: identity, alias: name)
    let discovery = lookout.discovery
    let (output, json) = (self.output, self.json)
    Task { [self] in
      var listed = Set<String>()
      for await sighting in discovery.sightings {
        let device = sighting.device
        let key = device.fingerprint.uppercased() + "|" + sighting.address
        // A flood of made-up devices is listed up to a point, not kept without bound.
        guard listed.count < 1024, listed.insert(key).inserted else { continue }
        count.add(1, ordering: .relaxed)
        let port = device.port ?? Int(LocalSendProtocol.defaultPort)
        let target = LocalSendTarget(
          host: sighting.address, port: port, fingerprint: nil, plainHTTP: !device.usesTLS)
        output.emit(
          LocalSendFound(
            peer: device.alias, fingerprint: device.fingerprint, protocol: "localsend",
            deviceType: device.deviceType, deviceModel: device.deviceModel,
            address: target.description, source: sighting.via.rawValue))
        guard !json else { continue }
        var kind: [String] = []
        if let model = device.deviceModel, !model.isEmpty { kind.append(printable(model)) }
        if let type = device.deviceType, !type.isEmpty { kind.append(printable(type)) }
        // Grouped as every other key is shown (what the device claims, escaped, when it is
        // no fingerprint: plain HTTP's random text).
        let fingerprint = LocalSendTargets.shortKey(device.fingerprint)
        output.say(
          "+ \(DisplayText.quoted(device.alias)) [\(fingerprint)] LocalSend"
            + (kind.isEmpty ? "" : " (\(kind.joined(separator: ", ")))")
            + "  \(target)\(device.usesTLS ? "" : "  plain HTTP")"
            + (sighting.via == .scan ? "  (found by scanning [discovery] localsend_scan)" : ""))
      }
    }
    return lookout
  }
}
