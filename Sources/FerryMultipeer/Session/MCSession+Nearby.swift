import Ferry
import Foundation

extension MCSession {
  /// Makes the data `peerID` needs to connect to this session without discovery (the
  /// application carries it, for example in a QR code or over another link): this peer's
  /// fingerprint and name, and the port and addresses of an unpublished listener started for
  /// it. Both ends then call ``connectPeer(_:withNearbyConnectionData:)`` with the other's data.
  ///
  /// - Parameter completionHandler: Called once on the session's queue, with the data or an
  ///   ``MCError`` (the listener could not bind a port).
  public func nearbyConnectionData(
    forPeer peerID: MCPeerID,
    withCompletionHandler completionHandler: @escaping (Data?, Error?) -> Void
  ) {
    let completion = UncheckedBox(completionHandler)
    let listener = nearbyListener()
    let me = myPeerID.ferryPeer
    Task { [queue, self] in
      do {
        let port = try await listener.listen(for: self)
        let data = NearbyConnectionData(
          peer: me, port: port, addresses: NearbyConnectionData.localAddresses()
        ).encoded
        queue.async { completion.value(data, nil) }
      } catch {
        queue.async { completion.value(nil, error) }
      }
    }
  }

  /// Connects to `peerID` with the data its session made by
  /// ``nearbyConnectionData(forPeer:withCompletionHandler:)``: invitations from it are
  /// accepted, and it is invited at each of its addresses in turn. The delegate hears
  /// `connecting`, then `connected` or `notConnected`. Data that is not valid connection data,
  /// or that names another peer, ends in `notConnected`.
  public func connectPeer(_ peerID: MCPeerID, withNearbyConnectionData data: Data) {
    guard let (peer, port, addresses) = NearbyConnectionData.decode(data),
      peer.fingerprint == peerID.ferryPeer.fingerprint
    else {
      attempt(with: peerID) {
        throw MCError(.invalidParameter, "not connection data of \(peerID.displayName)")
      }
      return
    }
    let listener = nearbyListener()
    listener.expect(peer.fingerprint)
    let ferry = ferrySession
    let this = WeakReference(self)
    attempt(with: peerID, tracked: true) {
      // Listening first, so that the peer's own invitation can reach this session.
      if let session = this.object { _ = try? await listener.listen(for: session) }
      // One invitation over every address, each tried in turn until one connects.
      do {
        _ = try await ferry.inviteKeepingConnected(
          endpoints: addresses.map { ($0, Int(port)) }, expecting: peer.fingerprint,
          timeout: .seconds(30))
      } catch {
        throw MCError(.notConnected, "\(peerID.displayName) could not be reached: \(error)")
      }
    }
  }

  /// Stops connecting to `peerID` (a connection already made stays): its invitations are
  /// declined from now on.
  public func cancelConnectPeer(_ peerID: MCPeerID) {
    let fingerprint = peerID.ferryPeer.fingerprint
    let attempt = state.withLock { $0.attempts.removeValue(forKey: fingerprint) }
    attempt?.task.cancel()
    state.withLock { $0.nearby }?.forget(fingerprint)
  }

  /// The session's nearby listener, made on first use.
  func nearbyListener() -> NearbyListener {
    if let existing = state.withLock({ $0.nearby }) { return existing }
    let made = NearbyListener(session: self)
    let kept = state.withLock { state -> NearbyListener in
      if let other = state.nearby { return other }
      state.nearby = made
      return made
    }
    if kept !== made { made.stop() }
    return kept
  }
}
