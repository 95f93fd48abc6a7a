// A FerryMultipeer conformance app (docs/MULTIPEER.md, "Conformance apps"): one written with
// Swift concurrency, as new apps are.
//
//   mpc-conformance-async advertise SERVICE NAME FOLDER | browse SERVICE NAME
//
// One Sendable delegate object turns every delegate call into an element of an AsyncStream;
// the app's logic is one @MainActor async function a role, which awaits those events in order,
// answers invitations through a @Sendable wrapper of the handler, reads and writes the stream in
// detached tasks and awaits sendResource through a checked continuation. (The delegate is not
// a @MainActor class: FerryMultipeer calls delegates on its own queues, where a
// @preconcurrency conformance traps in Swift 6 mode.) Proves that delegate calls bridge to
// async/await in order, and that handlers and completions work from the main actor. Then the
// exchange every conformance app does: 20 messages echoed in order, a 1 000 000-byte stream, a
// 30 MB resource moved to FOLDER/big.bin.
import FerryMultipeer
import Foundation

func say(_ line: String) {
  FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ reason: String, status: Int32 = 1) -> Never {
  FileHandle.standardError.write(Data("fail: \(reason)\n".utf8))
  exit(status)
}

/// A Foundation stream, which is not Sendable, handed to the one task that uses it.
struct Handover<Value>: @unchecked Sendable {
  let value: Value
}

/// A delegate call, as the app's async code sees it.
enum Event: Sendable {
  case found(MCPeerID)
  case invitation(MCPeerID, @Sendable (Bool, MCSession?) -> Void)
  case state(MCPeerID, MCSessionState)
  case data(String, MCPeerID)
  case stream(Handover<InputStream>, MCPeerID)
  case resource(Int, String, MCPeerID)
  case failure(String)
}

/// Every delegate call, as one AsyncStream in the order the calls came. Holds nothing mutable.
final class Delegate: NSObject, MCSessionDelegate, MCNearbyServiceAdvertiserDelegate,
  MCNearbyServiceBrowserDelegate, Sendable
{
  let events: AsyncStream<Event>
  let continuation: AsyncStream<Event>.Continuation
  let folder: URL?

  init(folder: URL?) {
    (events, continuation) = AsyncStream.makeStream(of: Event.self)
    self.folder = folder
  }

  func browser(
    _ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID,
    withDiscoveryInfo info: [String: String]?
  ) {
    continuation.yield(.found(peerID))
  }

  func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID) {}

  func browser(_ browser: MCNearbyServiceBrowser, didNotStartBrowsingForPeers error: any Error) {
    continuation.yield(.failure("not browsing: \(error)"))
  }

  func advertiser(
    _ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID,
    withContext context: Data?, invitationHandler: @escaping (Bool, MCSession?) -> Void
  ) {
    // Answered later, from the main actor: FerryMultipeer takes the answer from any thread.
    nonisolated(unsafe) let handler = invitationHandler
    continuation.yield(.invitation(peerID, { handler($0, $1) }))
  }

  func advertiser(
    _ advertiser: MCNearbyServiceAdvertiser, didNotStartAdvertisingPeer error: any Error
  ) {
    continuation.yield(.failure("not advertising: \(error)"))
  }

  func session(_ session: MCSession, peer peerID: MCPeerID, didChange state: MCSessionState) {
    continuation.yield(.state(peerID, state))
  }

  func session(_ session: MCSession, didReceive data: Data, fromPeer peerID: MCPeerID) {
    continuation.yield(.data(String(decoding: data, as: UTF8.self), peerID))
  }

  func session(
    _ session: MCSession, didReceive stream: InputStream, withName streamName: String,
    fromPeer peerID: MCPeerID
  ) {
    continuation.yield(.stream(Handover(value: stream), peerID))
  }

  func session(
    _ session: MCSession, didStartReceivingResourceWithName resourceName: String,
    fromPeer peerID: MCPeerID, with progress: Progress
  ) {}

  func session(
    _ session: MCSession, didFinishReceivingResourceWithName resourceName: String,
    fromPeer peerID: MCPeerID, at localURL: URL?, withError error: (any Error)?
  ) {
    // Moved here, before returning (the temporary file is deleted then), never onto a file.
    guard let localURL, let folder, resourceName == "big.bin" else {
      continuation.yield(.failure("resource \(resourceName): \(error.map { "\($0)" } ?? "")"))
      return
    }
    let file = folder.appendingPathComponent(resourceName)
    do {
      guard !FileManager.default.fileExists(atPath: file.path) else {
        throw CocoaError(.fileWriteFileExists)
      }
      try FileManager.default.moveItem(at: localURL, to: file)
      let size = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int ?? 0
      continuation.yield(.resource(size, file.path, peerID))
    } catch {
      continuation.yield(.failure("cannot move the resource to \(file.path): \(error)"))
    }
  }
}

/// Advertises as `name` and accepts the first invitation; echoes messages, reads the stream,
/// answers the resource; returns once the browser left after it.
@MainActor
func advertise(as name: String, serviceType: String, delegate: Delegate) async throws {
  let me = MCPeerID(displayName: name)
  let session = MCSession(peer: me, securityIdentity: nil, encryptionPreference: .required)
  session.delegate = delegate
  let advertiser = MCNearbyServiceAdvertiser(peer: me, discoveryInfo: nil, serviceType: serviceType)
  advertiser.delegate = delegate
  advertiser.startAdvertisingPeer()
  defer { advertiser.stopAdvertisingPeer() }
  say("advertising \(name)")
  var echoes = 0
  var finished = false
  for await event in delegate.events {
    switch event {
    case .invitation(let peer, let answer):
      say("invitation \(peer.displayName)")
      answer(true, session)
    case .state(let peer, let state):
      say("state \(peer.displayName) \(state)")
      guard state == .notConnected else { continue }
      guard finished else { fail("\(peer.displayName) is not connected") }
      return
    case .data(let text, let peer):
      guard text == "m\(echoes)" else { fail("got \(text), expected m\(echoes)") }
      echoes += 1
      try session.send(Data("echo:\(text)".utf8), toPeers: [peer], with: .reliable)
      if echoes == 20 { say("echo 20") }
    case .stream(let stream, let peer):
      let total = await Task.detached { readAll(stream.value) }.value
      say("stream \(total)")
      try session.send(Data("stream \(total)".utf8), toPeers: [peer], with: .reliable)
    case .resource(let size, let path, let peer):
      say("resource \(size) \(path)")
      try session.send(Data("resource \(size)".utf8), toPeers: [peer], with: .reliable)
      finished = true
    case .found:
      continue
    case .failure(let reason):
      fail(reason)
    }
  }
  fail("the delegate calls ended")
}

/// Browses for `name`, invites it, and sends it the messages, the stream and the resource;
/// returns once all of it arrived.
@MainActor
func browse(for name: String, serviceType: String, delegate: Delegate) async throws {
  let me = MCPeerID(displayName: "\(name)-browser")
  let session = MCSession(peer: me, securityIdentity: nil, encryptionPreference: .required)
  session.delegate = delegate
  let browser = MCNearbyServiceBrowser(peer: me, serviceType: serviceType)
  browser.delegate = delegate
  browser.startBrowsingForPeers()
  defer { browser.stopBrowsingForPeers() }
  say("browsing")
  var invited = false
  var echoes = 0
  var resourceSent = false
  for await event in delegate.events {
    switch event {
    case .found(let peer):
      say("found \(peer.displayName)")
      guard peer.displayName == name, !invited else { continue }
      invited = true
      browser.invitePeer(peer, to: session, withContext: nil, timeout: 30)
    case .state(let peer, let state):
      say("state \(peer.displayName) \(state)")
      if state == .notConnected { fail("\(peer.displayName) is not connected") }
      guard state == .connected else { continue }
      for index in 0..<20 {
        try session.send(Data("m\(index)".utf8), toPeers: [peer], with: .reliable)
      }
    case .data(let text, let peer) where text.hasPrefix("echo:"):
      guard text == "echo:m\(echoes)" else { fail("got \(text), expected echo:m\(echoes)") }
      echoes += 1
      guard echoes == 20 else { continue }
      say("echo 20")
      let output = try Handover(value: session.startStream(withName: "log", toPeer: peer))
      await Task.detached { writeAll(1_000_000, to: output.value) }.value
    case .data("stream 1000000", let peer):
      say("stream 1000000")
      let file = makeResource()
      defer { try? FileManager.default.removeItem(at: file) }  // this app's own copy
      try await withCheckedThrowingContinuation { (sent: CheckedContinuation<Void, any Error>) in
        // @Sendable: not the main actor's, as it is called on the session's queue.
        session.sendResource(at: file, withName: "big.bin", toPeer: peer) { @Sendable error in
          if let error { sent.resume(throwing: error) } else { sent.resume() }
        }
      }
      resourceSent = true
    case .data("resource 30000000", _):
      // Awaited in turn: the answer, even when it came first, is read after the completion.
      guard resourceSent else { fail("the resource was answered before it was sent") }
      say("resource 30000000")
      session.disconnect()
      return
    case .data(let text, _):
      fail("unexpected message \(text)")
    case .invitation, .stream, .resource:
      fail("unexpected \(event)")
    case .failure(let reason):
      fail(reason)
    }
  }
  fail("the delegate calls ended")
}

/// Reads `stream` to its end; blocks, so never on the main actor.
func readAll(_ stream: InputStream) -> Int {
  stream.open()
  defer { stream.close() }
  var buffer = [UInt8](repeating: 0, count: 64 << 10)
  var total = 0
  while true {
    let count = stream.read(&buffer, maxLength: buffer.count)
    guard count >= 0 else { fail("stream: \(String(describing: stream.streamError))") }
    if count == 0 { return total }
    total += count
  }
}

/// Writes `count` bytes to `stream` and closes it; blocks, so never on the main actor.
func writeAll(_ count: Int, to stream: OutputStream) {
  stream.open()
  defer { stream.close() }
  let chunk = [UInt8](repeating: 0x2A, count: 100_000)
  var written = 0
  while written < count {
    let wrote = stream.write(chunk, maxLength: min(chunk.count, count - written))
    guard wrote > 0 else { fail("stream: \(String(describing: stream.streamError))") }
    written += wrote
  }
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

let arguments = CommandLine.arguments
let role = arguments.count > 1 ? arguments[1] : ""
guard (role == "browse" && arguments.count == 4) || (role == "advertise" && arguments.count == 5)
else {
  fail(
    "usage: mpc-conformance-async advertise SERVICE NAME FOLDER | browse SERVICE NAME", status: 2)
}
Task.detached {
  try? await Task.sleep(for: .seconds(120))
  fail("nothing ended after 120 s", status: 3)
}
let delegate = Delegate(
  folder: role == "advertise" ? URL(fileURLWithPath: arguments[4], isDirectory: true) : nil)
do {
  if role == "browse" {
    try await browse(for: arguments[3], serviceType: arguments[2], delegate: delegate)
    say("ok")
  } else {
    try await advertise(as: arguments[3], serviceType: arguments[2], delegate: delegate)
    say("done")
  }
  exit(0)
} catch {
  fail("\(error)")
}
