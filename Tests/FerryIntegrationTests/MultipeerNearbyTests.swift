import Ferry
import FerryMultipeer
import Foundation
import Synchronization
import Testing

/// MultipeerConnectivity's out-of-band connection: each session makes its nearby connection
/// data, the application carries it across, both call connectPeer. No discovery: real TLS
/// over this host's addresses.
@Suite(
  "FerryMultipeer nearby connection data", .timeLimit(.minutes(2)), .serialized, .endsItsProcesses)
struct MultipeerNearbyTests {
  func connectionData(_ session: MCSession, for peer: MCPeerID) async throws -> Data {
    let box = Completion()
    let data = Mutex<Data?>(nil)
    session.nearbyConnectionData(forPeer: peer) { result, error in
      data.withLock { $0 = result }
      box.finish(error)
    }
    #expect(await box.wait() == "ok")
    return try #require(data.withLock { $0 })
  }

  @Test("both ends connect with each other's data: one connection, data flows")
  func connect() async throws {
    let left = MCPeerID(displayName: "near-left")
    let right = MCPeerID(displayName: "near-right")
    let leftSession = MCSession(peer: left)
    let rightSession = MCSession(peer: right)
    let leftRecorder = MultipeerRecorder(session: leftSession)
    let rightRecorder = MultipeerRecorder(session: rightSession)
    defer {
      leftSession.disconnect()
      rightSession.disconnect()
    }
    let leftData = try await connectionData(leftSession, for: right)
    let rightData = try await connectionData(rightSession, for: left)
    let fields = try #require(try JSONSerialization.jsonObject(with: leftData) as? [String: Any])
    #expect(fields["fp"] as? String == left.fingerprint)
    #expect(leftData.count < 2048)

    leftSession.connectPeer(right, withNearbyConnectionData: rightData)
    rightSession.connectPeer(left, withNearbyConnectionData: leftData)
    #expect(
      await leftRecorder.wait { _ in leftRecorder.states(of: "near-right").last == .connected })
    #expect(
      await rightRecorder.wait { _ in rightRecorder.states(of: "near-left").last == .connected })
    try await Task.sleep(for: .milliseconds(300))
    #expect(leftRecorder.states(of: "near-right") == [.connecting, .connected])
    #expect(rightRecorder.states(of: "near-left") == [.connecting, .connected])
    #expect(leftSession.ferrySession.connectedPeers.count == 1)
    try leftSession.send(Data("over the side door".utf8), toPeers: [right], with: .reliable)
    #expect(
      await rightRecorder.wait { $0.contains(.data("near-left", Data("over the side door".utf8))) })
  }

  @Test(
    "a session delegate set only once the session is connected (as after invitationHandler) is told connected, once"
  )
  func lateSessionDelegate() async throws {
    let left = MCPeerID(displayName: "late-left")
    let right = MCPeerID(displayName: "late-right")
    let leftSession = MCSession(peer: left)
    let rightSession = MCSession(peer: right)
    let leftRecorder = MultipeerRecorder(session: leftSession)
    defer {
      leftSession.disconnect()
      rightSession.disconnect()
    }
    let leftData = try await connectionData(leftSession, for: right)
    let rightData = try await connectionData(rightSession, for: left)
    leftSession.connectPeer(right, withNearbyConnectionData: rightData)
    rightSession.connectPeer(left, withNearbyConnectionData: leftData)
    #expect(
      await leftRecorder.wait { _ in leftRecorder.states(of: "late-right").last == .connected })
    // The right session has no delegate yet: its connecting and connected were told to nobody.
    try await waitUntil { !rightSession.connectedPeers.isEmpty }
    #expect(rightSession.connectedPeers == [left])
    let rightRecorder = MultipeerRecorder(session: rightSession)
    #expect(
      await rightRecorder.wait { _ in rightRecorder.states(of: "late-left").last == .connected })
    try await Task.sleep(for: .milliseconds(300))
    #expect(rightRecorder.states(of: "late-left").filter { $0 == .connected }.count == 1)
    try leftSession.send(Data("after".utf8), toPeers: [right], with: .reliable)
    #expect(await rightRecorder.wait { $0.contains(.data("late-left", Data("after".utf8))) })
  }

  @Test("data that is not connection data, or names another peer, ends in notConnected")
  func refused() async throws {
    let me = MCPeerID(displayName: "near-me")
    let other = MCPeerID(displayName: "near-other")
    let third = MCPeerID(displayName: "near-third")
    let session = MCSession(peer: me)
    let recorder = MultipeerRecorder(session: session)
    let otherSession = MCSession(peer: other)
    let otherData = try await connectionData(otherSession, for: me)
    // Garbage, an oversized blob, a host name instead of an address, and another peer's data.
    session.connectPeer(third, withNearbyConnectionData: Data("not json".utf8))
    #expect(
      await recorder.wait { _ in recorder.states(of: "near-third") == [.connecting, .notConnected] }
    )
    var big = try #require(try JSONSerialization.jsonObject(with: otherData) as? [String: Any])
    big["addresses"] = Array(repeating: "127.0.0.1", count: 5000)
    session.connectPeer(
      other, withNearbyConnectionData: try JSONSerialization.data(withJSONObject: big))
    #expect(
      await recorder.wait { _ in recorder.states(of: "near-other") == [.connecting, .notConnected] }
    )
    var named = try #require(try JSONSerialization.jsonObject(with: otherData) as? [String: Any])
    named["addresses"] = ["example.com"]
    session.connectPeer(
      other, withNearbyConnectionData: try JSONSerialization.data(withJSONObject: named))
    #expect(await recorder.wait { _ in recorder.states(of: "near-other").count == 4 })
    session.connectPeer(third, withNearbyConnectionData: otherData)
    #expect(await recorder.wait { _ in recorder.states(of: "near-third").count == 4 })
    #expect(recorder.states(of: "near-third").last == .notConnected)
    #expect(session.connectedPeers.isEmpty)
    #expect(otherSession.connectedPeers.isEmpty)
  }
}

/// The iOS way to use streams: scheduled in a run loop, driven by the delegate's events.
@Suite("FerryMultipeer streams in a run loop", .timeLimit(.minutes(2)), .endsItsProcesses)
struct MultipeerRunLoopStreamTests {
  /// Writes `total` bytes when told there is space, reads when told there are bytes (all of
  /// them, or one piece an event when `piecewise`); records every event. Runs on the thread
  /// whose run loop the streams are scheduled in.
  final class Pump: NSObject, StreamDelegate, @unchecked Sendable {
    let total: Int
    let piecewise: Bool
    var written = 0
    var read = 0
    var events: [String] = []
    var finished = false
    /// Called once the input ended and was closed.
    var onFinish: (() -> Void)?

    init(total: Int, piecewise: Bool = false) {
      self.total = total
      self.piecewise = piecewise
    }

    func stream(_ stream: Stream, handle event: Stream.Event) {
      if event.contains(.errorOccurred) {
        // Said, and the pump ends: a stream that failed is not a stall to wait out.
        let side = stream is OutputStream ? "out" : "in"
        events.append("\(side) error: \(String(describing: stream.streamError))")
        finished = true
        onFinish?()
        return
      }
      if let output = stream as? OutputStream {
        if event.contains(.openCompleted) { events.append("out open") }
        if event.contains(.hasSpaceAvailable), written < total {
          let chunk = [UInt8](repeating: 9, count: min(64 << 10, total - written))
          while written < total && output.hasSpaceAvailable {
            let count = output.write(chunk, maxLength: min(chunk.count, total - written))
            if count <= 0 { break }
            written += count
          }
          if written == total {
            events.append("out done")
            output.close()
          }
        }
      } else if let input = stream as? InputStream {
        if event.contains(.openCompleted) { events.append("in open") }
        if event.contains(.hasBytesAvailable) {
          var buffer = [UInt8](repeating: 0, count: 64 << 10)
          while input.hasBytesAvailable {
            let count = input.read(&buffer, maxLength: buffer.count)
            if count <= 0 { break }
            read += count
            if piecewise { break }  // the stream tells again while bytes are left
          }
        }
        if event.contains(.endEncountered) {
          events.append("in end")
          input.close()
          finished = true
          onFinish?()
        }
      }
    }
  }

  @Test("an OutputStream and the InputStream it makes, both run by a run loop's events")
  func runLoopStreams() async throws {
    let sender = MCSession(peer: MCPeerID(displayName: "loop-out"))
    let receiver = MCSession(peer: MCPeerID(displayName: "loop-in"))
    let senderRecorder = MultipeerRecorder(session: sender)
    let receiverDelegate = StreamCatcher(session: receiver)
    let senderData = try await MultipeerNearbyTests().connectionData(sender, for: receiver.myPeerID)
    let receiverData = try await MultipeerNearbyTests().connectionData(
      receiver, for: sender.myPeerID)
    sender.connectPeer(receiver.myPeerID, withNearbyConnectionData: receiverData)
    receiver.connectPeer(sender.myPeerID, withNearbyConnectionData: senderData)
    #expect(await senderRecorder.wait { _ in sender.connectedPeers.count == 1 })
    #expect(await receiverDelegate.connected.wait() == "ok")

    let output = try sender.startStream(withName: "loop", toPeer: receiver.myPeerID)
    let pump = Pump(total: 5_000_000)
    let done = Completion()
    nonisolated(unsafe) let streams = (output, receiverDelegate)
    let thread = Thread {
      let runLoop = RunLoop.current
      // Only a far timer: the loop sleeps between events, as an app's does.
      runLoop.add(Timer(timeInterval: 1000, repeats: false) { _ in }, forMode: .default)
      streams.0.delegate = pump
      streams.0.schedule(in: runLoop, forMode: .default)
      streams.0.open()
      let deadline = Date().addingTimeInterval(60)
      var input: InputStream?
      while !pump.finished && Date() < deadline {
        if input == nil, let arrived = streams.1.stream.withLock({ $0 })?.value {
          input = arrived
          arrived.delegate = pump
          arrived.schedule(in: runLoop, forMode: .default)
          arrived.open()
        }
        _ = runLoop.run(mode: .default, before: Date().addingTimeInterval(0.05))
      }
      done.finish(nil)
    }
    thread.start()
    #expect(await done.wait() == "ok")
    #expect(!pump.events.contains { $0.contains("error") }, "\(pump.events)")
    #expect(pump.read == 5_000_000)
    #expect(pump.written == 5_000_000)
    #expect(pump.events.contains("out open") && pump.events.contains("out done"))
    #expect(pump.events.contains("in open") && pump.events.contains("in end"))
  }
}

/// Keeps the first stream a session receives, and says when its peer connected.
final class StreamCatcher: NSObject, MCSessionDelegate, @unchecked Sendable {
  let stream = Mutex<UncheckedStream?>(nil)
  let connected = Completion()

  struct UncheckedStream: @unchecked Sendable { let value: InputStream }

  init(session: MCSession) {
    super.init()
    session.delegate = self
  }

  func session(_ session: MCSession, peer peerID: MCPeerID, didChange state: MCSessionState) {
    if state == .connected { connected.finish(nil) }
  }
  func session(_ session: MCSession, didReceive data: Data, fromPeer peerID: MCPeerID) {}
  func session(
    _ session: MCSession, didReceive stream: InputStream, withName streamName: String,
    fromPeer peerID: MCPeerID
  ) {
    let kept = UncheckedStream(value: stream)
    self.stream.withLock { $0 = kept }
  }
  func session(
    _ session: MCSession, didStartReceivingResourceWithName resourceName: String,
    fromPeer peerID: MCPeerID, with progress: Progress
  ) {}
  func session(
    _ session: MCSession, didFinishReceivingResourceWithName resourceName: String,
    fromPeer peerID: MCPeerID, at localURL: URL?, withError error: (any Error)?
  ) {}
}
