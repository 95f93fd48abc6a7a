// A FerryMultipeer conformance app (docs/MULTIPEER.md, "Conformance apps"): one that makes its
// MCSession lazily, on first use, as apps that keep it in a `lazy var` do.
//
//   mpc-conformance-lazy-session advertise SERVICE NAME FOLDER | browse SERVICE NAME
//
// Nothing makes the session at launch: the browser makes it inside
// browser(_:foundPeer:withDiscoveryInfo:), by inviting the peer into it; the advertiser inside
// advertiser(_:didReceiveInvitationFromPeer:withContext:invitationHandler:), by handing it to
// the invitation handler. Proves that a session made inside a delegate call, on
// FerryMultipeer's queue, connects and carries everything. The main thread runs
// RunLoop.main.run(). Then the exchange every conformance app does: 20 messages echoed in
// order, a 1 000 000-byte stream, a 30 MB resource moved to FOLDER/big.bin.
import FerryMultipeer
import Foundation

func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ reason: String, status: Int32 = 1) -> Never {
  FileHandle.standardError.write(Data("fail: \(reason)\n".utf8))
  exit(status)
}

/// The 30 MB resource, in a file of this app's own: byte i is i × 7 + 3 (mod 256).
func makeResource() -> URL {
  let period = Data((0..<256).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
  var content = Data(capacity: 30_000_000)
  while content.count < 30_000_000 { content.append(period.prefix(30_000_000 - content.count)) }
  let file = FileManager.default.temporaryDirectory
    .appendingPathComponent("mpc-conformance-\(UUID().uuidString).bin")
  do {
    try content.write(to: file, options: .withoutOverwriting)
  } catch {
    fail("cannot write \(file.path): \(error)")
  }
  return file
}

final class App: NSObject, MCSessionDelegate, MCNearbyServiceAdvertiserDelegate,
  MCNearbyServiceBrowserDelegate, @unchecked Sendable
{
  let me: MCPeerID
  let advertiser: MCNearbyServiceAdvertiser?
  let browser: MCNearbyServiceBrowser?
  let target: String
  let folder: URL?
  var invited = false  // on the browser's queue
  // On the session's queue (its delegate calls and sendResource's completion handler):
  var echoes = 0
  var resourceSent = false
  var resourceAnswered = false
  var finished = false

  /// Made on first use, inside a delegate call: when the browser invites the peer it found, or
  /// the advertiser accepts an invitation.
  lazy var session: MCSession = {
    let session = MCSession(peer: self.me, securityIdentity: nil, encryptionPreference: .required)
    session.delegate = self
    say("session made")
    return session
  }()

  init(role: String, serviceType: String, name: String, folder: URL?) {
    let me = MCPeerID(displayName: role == "browse" ? "\(name)-browser" : name)
    self.me = me
    advertiser =
      role == "advertise"
      ? MCNearbyServiceAdvertiser(peer: me, discoveryInfo: nil, serviceType: serviceType) : nil
    browser = role == "browse" ? MCNearbyServiceBrowser(peer: me, serviceType: serviceType) : nil
    target = name
    self.folder = folder
    super.init()
    advertiser?.delegate = self
    browser?.delegate = self
    advertiser?.startAdvertisingPeer()
    browser?.startBrowsingForPeers()
    say(advertiser != nil ? "advertising \(name)" : "browsing")
  }

  func browser(
    _ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID,
    withDiscoveryInfo info: [String: String]?
  ) {
    say("found \(peerID.displayName)")
    guard peerID.displayName == target, !invited else { return }
    invited = true
    browser.invitePeer(peerID, to: session, withContext: nil, timeout: 30)
  }

  func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID) {
    say("lost \(peerID.displayName)")
  }

  func browser(_ browser: MCNearbyServiceBrowser, didNotStartBrowsingForPeers error: any Error) {
    fail("not browsing: \(error)")
  }

  func advertiser(
    _ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID,
    withContext context: Data?, invitationHandler: @escaping (Bool, MCSession?) -> Void
  ) {
    say("invitation \(peerID.displayName)")
    invitationHandler(true, session)
  }

  func advertiser(
    _ advertiser: MCNearbyServiceAdvertiser, didNotStartAdvertisingPeer error: any Error
  ) {
    fail("not advertising: \(error)")
  }

  func session(_ session: MCSession, peer peerID: MCPeerID, didChange state: MCSessionState) {
    say("state \(peerID.displayName) \(state)")
    if state == .connected && browser != nil {
      for index in 0..<20 { send("m\(index)", to: peerID) }
    } else if state == .notConnected {
      guard finished else { fail("\(peerID.displayName) is not connected") }
      say("done")
      exit(0)
    }
  }

  func session(_ session: MCSession, didReceive data: Data, fromPeer peerID: MCPeerID) {
    let text = String(decoding: data, as: UTF8.self)
    if advertiser != nil {
      guard text == "m\(echoes)" else { fail("got \(text), expected m\(echoes)") }
      echoes += 1
      send("echo:\(text)", to: peerID)
      if echoes == 20 { say("echo 20") }
    } else if text.hasPrefix("echo:") {
      guard text == "echo:m\(echoes)" else { fail("got \(text), expected echo:m\(echoes)") }
      echoes += 1
      if echoes == 20 {
        say("echo 20")
        writeStream(to: peerID)
      }
    } else if text == "stream 1000000" {
      say(text)
      sendResource(to: peerID)
    } else if text == "resource 30000000" {
      resourceAnswered = true
      finishIfDone()
    } else {
      fail("unexpected message \(text)")
    }
  }

  func session(
    _ session: MCSession, didReceive stream: InputStream, withName streamName: String,
    fromPeer peerID: MCPeerID
  ) {
    guard streamName == "log" else { fail("unexpected stream \(streamName)") }
    // Read on a thread of its own, never on the session's queue.
    nonisolated(unsafe) let stream = stream
    Thread { [self] in
      stream.open()
      var buffer = [UInt8](repeating: 0, count: 64 << 10)
      var total = 0
      while true {
        let count = stream.read(&buffer, maxLength: buffer.count)
        guard count >= 0 else { fail("stream: \(String(describing: stream.streamError))") }
        if count == 0 { break }
        total += count
      }
      stream.close()
      say("stream \(total)")
      send("stream \(total)", to: peerID)
    }.start()
  }

  func session(
    _ session: MCSession, didStartReceivingResourceWithName resourceName: String,
    fromPeer peerID: MCPeerID, with progress: Progress
  ) {}

  func session(
    _ session: MCSession, didFinishReceivingResourceWithName resourceName: String,
    fromPeer peerID: MCPeerID, at localURL: URL?, withError error: (any Error)?
  ) {
    guard let localURL, let folder, resourceName == "big.bin" else {
      fail("resource \(resourceName): \(error.map { "\($0)" } ?? "not expected")")
    }
    // Moved before returning (the temporary file is deleted then), and never onto a file.
    let file = folder.appendingPathComponent(resourceName)
    guard !FileManager.default.fileExists(atPath: file.path) else { fail("\(file.path) exists") }
    do {
      try FileManager.default.moveItem(at: localURL, to: file)
      let size = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int ?? 0
      say("resource \(size) \(file.path)")
      send("resource \(size)", to: peerID)
      finished = true
    } catch {
      fail("cannot move the resource to \(file.path): \(error)")
    }
  }

  func send(_ text: String, to peer: MCPeerID) {
    do {
      try session.send(Data(text.utf8), toPeers: [peer], with: .reliable)
    } catch {
      fail("cannot send \(text): \(error)")
    }
  }

  /// Writes 1 000 000 bytes on a stream "log", from a thread of its own.
  func writeStream(to peer: MCPeerID) {
    let output: OutputStream
    do {
      output = try session.startStream(withName: "log", toPeer: peer)
    } catch {
      fail("cannot open a stream: \(error)")
    }
    nonisolated(unsafe) let stream = output
    Thread {
      stream.open()
      let chunk = [UInt8](repeating: 0x2A, count: 100_000)
      var written = 0
      while written < 1_000_000 {
        let count = stream.write(chunk, maxLength: min(chunk.count, 1_000_000 - written))
        guard count > 0 else { fail("stream: \(String(describing: stream.streamError))") }
        written += count
      }
      stream.close()
    }.start()
  }

  func sendResource(to peer: MCPeerID) {
    let file = makeResource()
    session.sendResource(at: file, withName: "big.bin", toPeer: peer) { [self] error in
      try? FileManager.default.removeItem(at: file)  // this app's own copy
      if let error { fail("resource: \(error)") }
      resourceSent = true
      finishIfDone()
    }
  }

  func finishIfDone() {
    guard resourceSent && resourceAnswered else { return }
    say("resource 30000000")
    say("ok")
    finished = true
    session.disconnect()
    exit(0)
  }
}

let arguments = CommandLine.arguments
let role = arguments.count > 1 ? arguments[1] : ""
guard (role == "browse" && arguments.count == 4) || (role == "advertise" && arguments.count == 5)
else {
  fail(
    "usage: mpc-conformance-lazy-session advertise SERVICE NAME FOLDER | browse SERVICE NAME",
    status: 2)
}
DispatchQueue.global().asyncAfter(deadline: .now() + 120) {
  fail("nothing ended after 120 s", status: 3)
}
let app = App(
  role: role, serviceType: arguments[2], name: arguments[3],
  folder: role == "advertise" ? URL(fileURLWithPath: arguments[4], isDirectory: true) : nil)
withExtendedLifetime(app) {
  RunLoop.main.run()
}
