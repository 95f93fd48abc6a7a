// A FerryMultipeer app for the multi-host tests, answering as told:
//
//   ferry-test-mpc-peer SERVICE NAME MODE
//
// MODE: accept (accept invitations, move resources, echo data), decline, ignore (never
// answer), keep (accept, but never move a resource: prints whether it is gone after the
// delegate returned), mutual:PEER (accept, browse, and invite PEER at each "invite" line on
// standard input). One line per delegate call.
import FerryMultipeer
import Foundation

func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

final class Peer: NSObject, MCSessionDelegate, MCNearbyServiceAdvertiserDelegate,
  MCNearbyServiceBrowserDelegate, @unchecked Sendable
{
  let mode: String
  let me: MCPeerID
  let session: MCSession
  let advertiser: MCNearbyServiceAdvertiser
  let browser: MCNearbyServiceBrowser
  let folder = FileManager.default.temporaryDirectory
  let lock = NSLock()
  var target: MCPeerID?

  init(serviceType: String, name: String, mode: String) {
    self.mode = mode
    me = MCPeerID(displayName: name)
    session = MCSession(peer: me)
    advertiser = MCNearbyServiceAdvertiser(
      peer: me, discoveryInfo: ["mode": mode], serviceType: serviceType)
    browser = MCNearbyServiceBrowser(peer: me, serviceType: serviceType)
    super.init()
    session.delegate = self
    advertiser.delegate = self
    browser.delegate = self
    advertiser.startAdvertisingPeer()
    if mode.hasPrefix("mutual:") { browser.startBrowsingForPeers() }
    say("advertising \(name)")
  }

  func invite() {
    guard let target = lock.withLock({ target }) else { return say("nobody to invite") }
    browser.invitePeer(target, to: session, withContext: nil, timeout: 10)
  }

  func advertiser(
    _ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID,
    withContext context: Data?, invitationHandler: @escaping (Bool, MCSession?) -> Void
  ) {
    say(
      "invitation \(peerID.displayName) \(context.map { String(decoding: $0, as: UTF8.self) } ?? "")"
    )
    switch mode {
    case "decline": invitationHandler(false, nil)
    case "ignore": break
    default: invitationHandler(true, session)
    }
  }

  func browser(
    _ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID,
    withDiscoveryInfo info: [String: String]?
  ) {
    say("found \(peerID.displayName)")
    if mode == "mutual:\(peerID.displayName)" { lock.withLock { target = peerID } }
  }

  func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID) {
    say("lost \(peerID.displayName)")
  }

  func session(_ session: MCSession, peer peerID: MCPeerID, didChange state: MCSessionState) {
    say("state \(peerID.displayName) \(state)")
  }

  func session(_ session: MCSession, didReceive data: Data, fromPeer peerID: MCPeerID) {
    let text = String(decoding: data, as: UTF8.self)
    say("data \(peerID.displayName) \(text)")
    try? session.send(Data("echo:\(text)".utf8), toPeers: [peerID], with: .reliable)
  }

  func session(
    _ session: MCSession, didReceive stream: InputStream, withName streamName: String,
    fromPeer peerID: MCPeerID
  ) {}

  func session(
    _ session: MCSession, didStartReceivingResourceWithName resourceName: String,
    fromPeer peerID: MCPeerID, with progress: Progress
  ) {
    say("started \(peerID.displayName) \(resourceName)")
  }

  func session(
    _ session: MCSession, didFinishReceivingResourceWithName resourceName: String,
    fromPeer peerID: MCPeerID, at localURL: URL?, withError error: (any Error)?
  ) {
    guard let localURL else { return say("failed \(resourceName) \(String(describing: error))") }
    let path = localURL.path
    say("finished \(peerID.displayName) \(resourceName) \(path)")
    if mode == "keep" {
      DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) {
        say("gone \(path) \(!FileManager.default.fileExists(atPath: path))")
      }
    } else {
      let target = folder.appendingPathComponent(UUID().uuidString)
      try? FileManager.default.moveItem(at: localURL, to: target)
      say("moved \(resourceName) \(target.path)")
    }
  }
}

let arguments = CommandLine.arguments
guard arguments.count == 4 else {
  say("usage: ferry-test-mpc-peer SERVICE NAME MODE")
  exit(2)
}
let peer = Peer(serviceType: arguments[1], name: arguments[2], mode: arguments[3])
let input = Thread {
  while let line = readLine() {
    if line == "invite" { peer.invite() }
  }
}
input.start()
withExtendedLifetime(peer) {
  RunLoop.main.run()
}
