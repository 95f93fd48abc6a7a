import Foundation

/// What a session tells its delegate, as MultipeerConnectivity's `MCSessionDelegate`.
///
/// Every call arrives on the session's own serial queue, in order: a peer's `connecting`,
/// then (after the certificate question) `connected`, then what it sends. Do not block the
/// queue for long: the next call waits for this one. Read a received `InputStream` from another
/// thread or a run loop, never inside the call that hands it over.
///
/// The requirements are nonisolated, as on Apple's platforms, and are called on the session's
/// queue, never the main thread: a `@MainActor` type implements them `nonisolated` and hops to
/// the main actor itself (`DispatchQueue.main.async` keeps the calls in order). A
/// `@preconcurrency` conformance compiles, but in Swift 6 language mode the runtime checks the
/// main actor in each call, and traps.
public protocol MCSessionDelegate: NSObjectProtocol {
  /// `peerID` is now in `state`.
  func session(_ session: MCSession, peer peerID: MCPeerID, didChange state: MCSessionState)

  /// `peerID` sent `data` with ``MCSession/send(_:toPeers:with:)``.
  func session(_ session: MCSession, didReceive data: Data, fromPeer peerID: MCPeerID)

  /// `peerID` opened a byte stream named `streamName`; open `stream` and read it.
  func session(
    _ session: MCSession, didReceive stream: InputStream, withName streamName: String,
    fromPeer peerID: MCPeerID)

  /// `peerID` started sending a resource; `progress` follows it (poll `fractionCompleted`:
  /// Linux has no key-value observing).
  func session(
    _ session: MCSession, didStartReceivingResourceWithName resourceName: String,
    fromPeer peerID: MCPeerID, with progress: Progress)

  /// A resource arrived, verified, at `localURL` (a temporary file: move it before returning,
  /// or it is deleted), or failed with `error` (then `localURL` is nil). `resourceName` is the
  /// sender's text, as in the start call: never empty, `.` or `..`, never with NUL, but it may
  /// hold `/` or name a file that exists, so never move onto it unchecked.
  func session(
    _ session: MCSession, didFinishReceivingResourceWithName resourceName: String,
    fromPeer peerID: MCPeerID, at localURL: URL?, withError error: (any Error)?)

  /// `peerID` connected with `certificate` (an array holding its DER certificate as `Data`);
  /// call `certificateHandler` with true to let it in, false to turn it away. The peer is
  /// `connected` only once answered. Optional: the default accepts every peer (TLS already
  /// proved the peer holds the certificate's key; compare ``MCPeerID/fingerprint`` with one
  /// you trust to pin it).
  func session(
    _ session: MCSession, didReceiveCertificate certificate: [Any]?, fromPeer peerID: MCPeerID,
    certificateHandler: @escaping (Bool) -> Void)
}

extension MCSessionDelegate {
  /// Accepts the peer.
  public func session(
    _ session: MCSession, didReceiveCertificate certificate: [Any]?, fromPeer peerID: MCPeerID,
    certificateHandler: @escaping (Bool) -> Void
  ) {
    certificateHandler(true)
  }
}
