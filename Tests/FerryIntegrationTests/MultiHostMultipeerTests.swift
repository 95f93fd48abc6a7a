import Ferry
import FerryMultipeer
import Foundation
import Testing

/// FerryMultipeer across namespace hosts: this process (host a) is the ported sender, and the
/// ported receiver example (`ferry-example-mpc-receive`, Swift 6 mode) runs on host b, each
/// with its own avahi-daemon, over the bridge and real TLS.
@Suite(
  "FerryMultipeer across namespace hosts", .timeLimit(.minutes(3)), .needsToRunOnHostA,
  .serialized)
struct MultiHostMultipeerTests {
  var receiverBinary: String {
    URL(fileURLWithPath: Harness.ferryBinary).deletingLastPathComponent()
      .appendingPathComponent("ferry-example-mpc-receive").path
  }

  @Test(
    "found on host b, invited with a context, data echoed in order, a stream, a 30 MB resource moved by b's delegate, lost after b exits"
  )
  func sendToHostB() async throws {
    let type = Harness.uniqueServiceType("mc")
    let name = "b-drop-\(Int.random(in: 1000...9999))"
    let folder = try temporaryDirectory("mpc-b")
    defer { try? FileManager.default.removeItem(at: folder) }
    let receiver = try ChildProcess(Harness.on!, ["b", receiverBinary, type, name, folder.path])
    defer { receiver.signal(SIGKILL) }
    #expect(await receiver.waitForLine { $0.hasPrefix("advertising") } != nil)

    let me = MCPeerID(displayName: "host-a")
    let session = MCSession(peer: me, securityIdentity: nil, encryptionPreference: .required)
    let recorder = MultipeerRecorder(session: session)
    let browser = MCNearbyServiceBrowser(peer: me, serviceType: type)
    browser.delegate = recorder
    browser.startBrowsingForPeers()
    defer { browser.stopBrowsingForPeers() }
    await recorder.wait { _ in recorder.found(name) != nil }
    let peer = try #require(recorder.found(name), "\(recorder.calls)")
    #expect(recorder.calls.contains(.found(name, info: ["app": "filedrop"])))

    browser.invitePeer(peer, to: session, withContext: Data("FileDrop".utf8), timeout: 30)
    #expect(await recorder.wait { _ in recorder.states(of: name).last == .connected })
    #expect(recorder.states(of: name) == [.connecting, .connected])
    #expect(await receiver.waitForLine { $0 == "invitation host-a FileDrop" } != nil)
    #expect(await receiver.waitForLine { $0 == "state host-a connected" } != nil)

    for index in 0..<20 {
      try session.send(Data("m\(index)".utf8), toPeers: [peer], with: .reliable)
    }
    #expect(
      await recorder.wait {
        $0.filter { if case .data = $0 { true } else { false } }.count == 20
      })
    let echoes = recorder.calls.compactMap { call -> String? in
      if case .data(_, let data) = call { return String(decoding: data, as: UTF8.self) }
      return nil
    }
    #expect(echoes == (0..<20).map { "echo:m\($0)" })

    let output = try session.startStream(withName: "log", toPeer: peer)
    output.open()
    let chunk = [UInt8](repeating: 1, count: 100_000)
    for _ in 0..<10 { #expect(output.write(chunk, maxLength: chunk.count) == chunk.count) }
    output.close()
    #expect(await receiver.waitForLine { $0 == "stream host-a log 1000000" } != nil)

    let file = folder.appendingPathComponent("source.bin")
    let content = Data((0..<30_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
    try content.write(to: file)
    let done = Completion()
    let progress = session.sendResource(at: file, withName: "big.bin", toPeer: peer) {
      done.finish($0)
    }
    #expect(await done.wait() == "ok")
    #expect(progress?.fractionCompleted == 1.0)
    let moved = folder.appendingPathComponent("big.bin")
    #expect(await receiver.waitForLine { $0 == "received host-a big.bin \(moved.path)" } != nil)
    #expect(FileManager.default.contents(atPath: moved.path) == content)

    receiver.signal(SIGKILL)
    #expect(await recorder.wait { _ in recorder.states(of: name).last == .notConnected })
    #expect(await recorder.wait { $0.contains(.lost(name)) })
  }
}
