import Ferry
import Foundation

extension MCSession {
  /// Sends `data` to each of `peerIDs`, in call order for each peer (the order of two calls
  /// from different threads is the order they returned in). Returns once the message is
  /// queued; each peer has a queue of its own, so a peer that stops reading holds up only its
  /// own messages. `.unreliable` drops the message for a peer whose queue is not empty.
  ///
  /// - Throws: ``MCError`` `notConnected` when a peer is not connected (nothing is sent to
  ///   any); `invalidParameter` when `peerIDs` is empty or `data` is over 1 MiB (Ferry's
  ///   message limit: send more as a stream or a resource); `unknown` when 8 MiB are already
  ///   queued for a peer (it is not reading).
  public func send(_ data: Data, toPeers peerIDs: [MCPeerID], with mode: MCSessionSendDataMode)
    throws
  {
    guard !peerIDs.isEmpty else { throw MCError(.invalidParameter, "no peers to send to") }
    guard data.count <= ProtocolLimits.maximumMessageSize else {
      throw MCError(
        .invalidParameter,
        "a message holds at most \(ProtocolLimits.maximumMessageSize) bytes, not \(data.count)")
    }
    for peer in peerIDs where !isConnected(peer) {
      throw MCError(.notConnected, "\(peer.displayName) is not connected")
    }
    try outgoing.enqueue(data, to: peerIDs.map(\.ferryPeer), mode: mode.ferryMode)
  }

  /// Sends the file at `resourceURL` to `peerID` under `resourceName`, verified end to end.
  ///
  /// - Returns: The transfer's progress (cancel it to cancel the transfer at both ends), or nil
  ///   when it could not start; then `completionHandler` gets the error.
  /// - Parameter completionHandler: Called once, on the session's queue: nil when the peer has
  ///   the whole file, verified; else an ``MCError``.
  @discardableResult
  public func sendResource(
    at resourceURL: URL, withName resourceName: String, toPeer peerID: MCPeerID,
    withCompletionHandler completionHandler: ((Error?) -> Void)? = nil
  ) -> Progress? {
    let completion = UncheckedBox(completionHandler)
    let complete: @Sendable (MCError?) -> Void = { [queue] error in
      queue.async { completion.value?(error) }
    }
    guard isConnected(peerID) else {
      complete(MCError(.notConnected, "\(peerID.displayName) is not connected"))
      return nil
    }
    guard let name = ResourceName.escape(resourceName) else {
      complete(
        MCError(
          .invalidParameter,
          "the resource name \(resourceName.debugDescription) is empty or too long"))
      return nil
    }
    let transfer: ResourceTransfer
    do {
      transfer = try ferrySession.sendResource(at: resourceURL, named: name, to: peerID.ferryPeer)
    } catch {
      complete(MCError(error))
      return nil
    }
    Task {
      do {
        _ = try await transfer.result()
        complete(nil)
      } catch let error as TransferError {
        complete(MCError(error))
      } catch {
        complete(MCError(.unknown, "\(error)"))
      }
    }
    return transfer.progress.overall
  }

  /// Opens a byte stream named `streamName` to `peerID`. Write to it after `open()`; `write`
  /// blocks while the stream's buffer (1 MiB) is full, and `close()` ends the stream at the
  /// peer once everything written was sent.
  ///
  /// - Throws: ``MCError`` `notConnected`, or `invalidParameter` when the name is empty or
  ///   over 1024 UTF-8 bytes.
  public func startStream(withName streamName: String, toPeer peerID: MCPeerID) throws
    -> OutputStream
  {
    guard (1...1024).contains(streamName.utf8.count) else {
      throw MCError(.invalidParameter, "a stream name has 1 to 1024 UTF-8 bytes")
    }
    guard isConnected(peerID) else {
      throw MCError(.notConnected, "\(peerID.displayName) is not connected")
    }
    return FerryOutputStream(session: ferrySession, name: streamName, peer: peerID.ferryPeer)
  }
}
