// The receiving half of a MultipeerConnectivity file drop, ported from iOS by changing one
// import (`import MultipeerConnectivity` → `import FerryMultipeer`). Swift 6 language mode.
//
//   swift run ferry-example-mpc-receive SERVICE NAME DIR
//
// Advertises as NAME, accepts every invitation (printing its context, as an app's alert
// would show it), moves each received file from its temporary URL into DIR under a name not
// taken there (never replacing or deleting anything), answers a data message with
// "echo:<message>" and counts a stream's bytes. One line per delegate call.
import FerryMultipeer
import Foundation

/// Standard output, one whole line at a time (delegate calls come from several queues).
func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

final class Receiver: NSObject, MCSessionDelegate, MCNearbyServiceAdvertiserDelegate,
  @unchecked Sendable
{
  let peerID: MCPeerID
  let session: MCSession
  let advertiser: MCNearbyServiceAdvertiser
  let folder: URL

  init(serviceType: String, name: String, folder: URL) {
    peerID = MCPeerID(displayName: name)
    session = MCSession(peer: peerID, securityIdentity: nil, encryptionPreference: .required)
    advertiser = MCNearbyServiceAdvertiser(
      peer: peerID, discoveryInfo: ["app": "filedrop"], serviceType: serviceType)
    self.folder = folder
    super.init()
    session.delegate = self
    advertiser.delegate = self
    advertiser.startAdvertisingPeer()
    say("advertising \(name)")
  }

  // MARK: MCNearbyServiceAdvertiserDelegate

  func advertiser(
    _ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID,
    withContext context: Data?, invitationHandler: @escaping (Bool, MCSession?) -> Void
  ) {
    let text = context.map { String(decoding: $0, as: UTF8.self) } ?? ""
    say("invitation \(peerID.displayName) \(text)")
    invitationHandler(true, session)
  }

  func advertiser(
    _ advertiser: MCNearbyServiceAdvertiser, didNotStartAdvertisingPeer error: any Error
  ) {
    say("not advertising: \(error)")
  }

  // MARK: MCSessionDelegate

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
  ) {
    // Read on a thread of its own, never on the delegate's queue.
    let name = peerID.displayName
    // Foundation's streams are not Sendable: this thread alone uses it from now on.
    nonisolated(unsafe) let stream = stream
    let reader = Thread {
      stream.open()
      var buffer = [UInt8](repeating: 0, count: 64 << 10)
      var total = 0
      while true {
        let count = stream.read(&buffer, maxLength: buffer.count)
        if count <= 0 { break }
        total += count
      }
      stream.close()
      say("stream \(name) \(streamName) \(total)")
    }
    reader.start()
  }

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
    guard let localURL, error == nil else {
      say("failed \(peerID.displayName) \(resourceName) \(error.map { "\($0)" } ?? "")")
      return
    }
    // The temporary file is deleted once this returns: move it now.
    do {
      let target = try place(localURL, as: resourceName)
      say("received \(peerID.displayName) \(resourceName) \(target.path)")
    } catch {
      say("failed \(peerID.displayName) \(resourceName) \(error)")
    }
  }

  /// Moves `file` into the folder under a name made from `resourceName`, the sender's text:
  /// one file name (no `/`, never `.` or `..`) that nothing in the folder has yet: `name`,
  /// else `name (2)`, `name (3)`… Nothing in the folder is ever replaced or deleted.
  func place(_ file: URL, as resourceName: String) throws -> URL {
    var base = resourceName.replacingOccurrences(of: "/", with: "_")
    if base.isEmpty || base == "." || base == ".." { base = "_" + base }
    let files = FileManager.default
    for attempt in 1...1000 {
      let name = attempt == 1 ? base : "\(base) (\(attempt))"
      let target = folder.appendingPathComponent(name, isDirectory: false)
      // Taken, by a file, a folder or a link (even one to nothing).
      let taken =
        files.fileExists(atPath: target.path)
        || (try? files.attributesOfItem(atPath: target.path)) != nil
      if taken { continue }
      // moveItem fails rather than replace an item made there meanwhile.
      try files.moveItem(at: file, to: target)
      return target
    }
    throw CocoaError(.fileWriteFileExists)
  }
}

let arguments = CommandLine.arguments
guard arguments.count == 4 else {
  say("usage: ferry-example-mpc-receive SERVICE NAME DIR")
  exit(2)
}
let receiver = Receiver(
  serviceType: arguments[1], name: arguments[2], folder: URL(fileURLWithPath: arguments[3]))
withExtendedLifetime(receiver) {
  RunLoop.main.run()
}
