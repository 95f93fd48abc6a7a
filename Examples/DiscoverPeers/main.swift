// DiscoverPeers: advertise this process as a Ferry peer and list the peers around it.
//
//   swift run ferry-example-discover "My name" [seconds]
//
// Uses the Ferry library only: an Advertiser publishes this peer through avahi-daemon, a Browser
// reports the peers that come and go (this one included).
import Ferry
import Foundation

let arguments = CommandLine.arguments.dropFirst()
let name = arguments.first ?? ProcessInfo.processInfo.hostName
let duration = arguments.dropFirst().first.flatMap(Double.init) ?? 5

do {
  // A real program uses its identity's fingerprint; discovery only carries it.
  let fingerprint = try Fingerprint(bytes: (0..<32).map { _ in UInt8.random(in: 0...255) })
  let me = try PeerID(displayName: name, fingerprint: fingerprint)
  let advertiser = try Advertiser(peer: me, port: 9, discoveryInfo: ["example": "discover"])
  let published = try await advertiser.start()
  print("advertising as \(published) [\(fingerprint.shortDescription)]")

  let browser = try Browser()
  Task {
    try await Task.sleep(for: .seconds(duration))
    browser.stop()
  }
  for try await event in browser.events {
    switch event {
    case .found(let peer): print("found   \(peer)")
    case .updated(let peer): print("updated \(peer)")
    case .lost(let peer): print("lost    \(peer.name)")
    }
  }
  advertiser.stop()
} catch {
  print("error: \(error)")
  exit(1)
}
