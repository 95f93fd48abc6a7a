// The sending half of a MultipeerConnectivity file drop, ported from iOS by changing one
// import (`import MultipeerConnectivity` → `import FerryMultipeer`). Swift 5 language mode.
//
//   swift run ferry-example-mpc-send SERVICE PEER FILE...
//
// Browses for PEER, invites it with a context and a 30 s timeout, sends each file with
// sendResource and shows its progress by polling Progress (Linux has no key-value
// observing), then disconnects. Exits 0 when every file arrived, 1 otherwise.
import FerryMultipeer
import Foundation

func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

final class Sender: NSObject, MCSessionDelegate, MCNearbyServiceBrowserDelegate {
  let peerID = MCPeerID(displayName: "sender-\(getpid())")
  let session: MCSession
  let browser: MCNearbyServiceBrowser
  let target: String
  let files: [URL]
  var invited = false

  init(serviceType: String, target: String, files: [URL]) {
    session = MCSession(peer: peerID, securityIdentity: nil, encryptionPreference: .required)
    browser = MCNearbyServiceBrowser(peer: peerID, serviceType: serviceType)
    self.target = target
    self.files = files
    super.init()
    session.delegate = self
    browser.delegate = self
    browser.startBrowsingForPeers()
    say("browsing for \(target)")
  }

  // MARK: MCNearbyServiceBrowserDelegate

  func browser(
    _ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID,
    withDiscoveryInfo info: [String: String]?
  ) {
    say("found \(peerID.displayName) \(info ?? [:])")
    guard peerID.displayName == target, !invited else { return }
    invited = true
    browser.invitePeer(peerID, to: session, withContext: Data("FileDrop".utf8), timeout: 30)
  }

  func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID) {
    say("lost \(peerID.displayName)")
  }

  func browser(_ browser: MCNearbyServiceBrowser, didNotStartBrowsingForPeers error: Error) {
    say("cannot browse: \(error)")
    exit(1)
  }

  // MARK: MCSessionDelegate

  func session(_ session: MCSession, peer peerID: MCPeerID, didChange state: MCSessionState) {
    say("state \(peerID.displayName) \(state)")
    switch state {
    case .connected:
      browser.stopBrowsingForPeers()
      send(remaining: files, to: peerID)
    case .notConnected:
      say("could not reach \(peerID.displayName)")
      exit(1)
    default:
      break
    }
  }

  func send(remaining: [URL], to peer: MCPeerID) {
    guard let file = remaining.first else {
      say("sent \(files.count) file(s)")
      session.disconnect()
      exit(0)
    }
    let name = file.lastPathComponent
    var progress: Progress?
    progress = session.sendResource(at: file, withName: name, toPeer: peer) { error in
      if let error = error {
        say("failed \(name): \(error)")
        exit(1)
      }
      say("done \(name) \(Int((progress?.fractionCompleted ?? 0) * 100))%")
      self.send(remaining: Array(remaining.dropFirst()), to: peer)
    }
    // A progress display polls fractionCompleted, as a timer in an app would.
    guard let polled = progress else { return }
    // Delegate calls come on the session's queue; timers run on the main run loop.
    DispatchQueue.main.async {
      _ = Timer.scheduledTimer(withTimeInterval: 0.5, repeats: true) { timer in
        guard !polled.isFinished else { return timer.invalidate() }
        say("progress \(name) \(Int(polled.fractionCompleted * 100))%")
      }
    }
  }

  func session(_ session: MCSession, didReceive data: Data, fromPeer peerID: MCPeerID) {}

  func session(
    _ session: MCSession, didReceive stream: InputStream, withName streamName: String,
    fromPeer peerID: MCPeerID
  ) {}

  func session(
    _ session: MCSession, didStartReceivingResourceWithName resourceName: String,
    fromPeer peerID: MCPeerID, with progress: Progress
  ) {}

  func session(
    _ session: MCSession, didFinishReceivingResourceWithName resourceName: String,
    fromPeer peerID: MCPeerID, at localURL: URL?, withError error: Error?
  ) {}
}

let arguments = CommandLine.arguments
guard arguments.count >= 4 else {
  say("usage: ferry-example-mpc-send SERVICE PEER FILE...")
  exit(2)
}
let sender = Sender(
  serviceType: arguments[1], target: arguments[2],
  files: arguments[3...].map { URL(fileURLWithPath: $0) })
withExtendedLifetime(sender) {
  RunLoop.main.run()
}
