import FerryMultipeer
import Foundation
import Synchronization

/// A MultipeerConnectivity app's delegates, as a test writes them: every call is recorded,
/// with the queue it ran on checked; invitations are answered by `answer`; received files are
/// moved into `folder` unless `moveResources` is false; streams are read on a thread of their
/// own.
final class MultipeerRecorder: NSObject, MCSessionDelegate, MCNearbyServiceBrowserDelegate,
  MCNearbyServiceAdvertiserDelegate, @unchecked Sendable
{
  enum Call: Sendable, Equatable {
    case state(String, MCSessionState)
    case data(String, Data)
    case stream(String, name: String, bytes: Int)
    case started(String, name: String)
    case finished(String, name: String, movedTo: String?, error: String?)
    case found(String, info: [String: String]?)
    case lost(String)
    case invitation(String, context: Data?)
    case certificate(String, sha256Matches: Bool)
  }

  /// How invitations are answered: true, false, or nil (never).
  let answer: Bool?
  let folder: URL
  let moveResources: Bool
  let acceptCertificates: Bool
  let session: MCSession
  /// The temporary URLs the delegate was given.
  let handedURLs = Mutex<[URL]>([])
  private let recorded = Mutex<[Call]>([])
  /// Peers the browser found, by display name.
  private let foundPeers = Mutex<[String: MCPeerID]>([:])

  init(
    session: MCSession, answer: Bool? = true, folder: URL? = nil, moveResources: Bool = true,
    acceptCertificates: Bool = true
  ) {
    self.session = session
    self.answer = answer
    self.folder = folder ?? FileManager.default.temporaryDirectory
    self.moveResources = moveResources
    self.acceptCertificates = acceptCertificates
    super.init()
    session.delegate = self
  }

  var calls: [Call] { recorded.withLock { $0 } }

  func found(_ name: String) -> MCPeerID? { foundPeers.withLock { $0[name] } }

  /// The states reported for `name`, in order.
  func states(of name: String) -> [MCSessionState] {
    calls.compactMap { call in
      if case .state(let peer, let state) = call, peer == name { return state }
      return nil
    }
  }

  /// Waits until `predicate` holds for the calls so far (polling), up to `timeout`.
  @discardableResult
  func wait(
    timeout: Duration = Harness.patience, until predicate: ([Call]) -> Bool
  ) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      if predicate(calls) { return true }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return predicate(calls)
  }

  private func record(_ call: Call) {
    recorded.withLock { $0.append(call) }
  }

  // MARK: MCSessionDelegate

  func session(_ session: MCSession, peer peerID: MCPeerID, didChange state: MCSessionState) {
    record(.state(peerID.displayName, state))
  }

  func session(_ session: MCSession, didReceive data: Data, fromPeer peerID: MCPeerID) {
    record(.data(peerID.displayName, data))
  }

  func session(
    _ session: MCSession, didReceive stream: InputStream, withName streamName: String,
    fromPeer peerID: MCPeerID
  ) {
    nonisolated(unsafe) let stream = stream
    let name = peerID.displayName
    Thread { [self] in
      stream.open()
      var buffer = [UInt8](repeating: 0, count: 100_000)
      var total = 0
      while case let count = stream.read(&buffer, maxLength: buffer.count), count > 0 {
        total += count
      }
      stream.close()
      record(.stream(name, name: streamName, bytes: total))
    }.start()
  }

  func session(
    _ session: MCSession, didStartReceivingResourceWithName resourceName: String,
    fromPeer peerID: MCPeerID, with progress: Progress
  ) {
    record(.started(peerID.displayName, name: resourceName))
  }

  func session(
    _ session: MCSession, didFinishReceivingResourceWithName resourceName: String,
    fromPeer peerID: MCPeerID, at localURL: URL?, withError error: (any Error)?
  ) {
    var movedTo: String?
    if let localURL {
      handedURLs.withLock { $0.append(localURL) }
      if moveResources {
        let target = folder.appendingPathComponent(UUID().uuidString)
        if (try? FileManager.default.moveItem(at: localURL, to: target)) != nil {
          movedTo = target.path
        }
      }
    }
    record(
      .finished(
        peerID.displayName, name: resourceName, movedTo: movedTo, error: error.map { "\($0)" }))
  }

  func session(
    _ session: MCSession, didReceiveCertificate certificate: [Any]?, fromPeer peerID: MCPeerID,
    certificateHandler: @escaping (Bool) -> Void
  ) {
    let der = certificate?.first as? Data
    let matches = der.map { sha256Hex($0) == peerID.fingerprint } ?? false
    record(.certificate(peerID.displayName, sha256Matches: matches))
    certificateHandler(acceptCertificates)
  }

  // MARK: MCNearbyServiceBrowserDelegate

  func browser(
    _ browser: MCNearbyServiceBrowser, foundPeer peerID: MCPeerID,
    withDiscoveryInfo info: [String: String]?
  ) {
    foundPeers.withLock { $0[peerID.displayName] = peerID }
    record(.found(peerID.displayName, info: info))
  }

  func browser(_ browser: MCNearbyServiceBrowser, lostPeer peerID: MCPeerID) {
    record(.lost(peerID.displayName))
  }

  // MARK: MCNearbyServiceAdvertiserDelegate

  func advertiser(
    _ advertiser: MCNearbyServiceAdvertiser, didReceiveInvitationFromPeer peerID: MCPeerID,
    withContext context: Data?, invitationHandler: @escaping (Bool, MCSession?) -> Void
  ) {
    record(.invitation(peerID.displayName, context: context))
    if let answer { invitationHandler(answer, answer ? session : nil) }
  }
}

/// SHA-256 of `data` in upper-case hex, by sha256sum (an independent implementation).
func sha256Hex(_ data: Data) -> String {
  let path = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
  _ = FileManager.default.createFile(atPath: path.path, contents: data)
  defer { try? FileManager.default.removeItem(at: path) }
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
  process.arguments = [path.path]
  let pipe = Pipe()
  process.standardOutput = pipe
  try? process.run()
  process.waitUntilExit()
  let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
  return String(output.prefix(64)).uppercased()
}
