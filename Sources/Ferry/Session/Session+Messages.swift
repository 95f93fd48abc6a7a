internal import FerryWire
import NIOCore

extension Session {
  /// Data messages from every peer, in arrival order per peer. Each message taken gives its
  /// sender credit for another; a session that does not read slows its senders down rather
  /// than buffering without bound. Several readers may iterate it at once: each message goes
  /// to one of them (the one waiting longest), none is lost and no reader hangs.
  public var messages: CreditedSequence<ReceivedMessage> {
    CreditedSequence(buffer: transfers.messages)
  }

  /// Streams opened by peers. Several readers may wait at once (`AsyncStream`'s rule): each
  /// stream goes to one of them.
  public var incomingStreams: AsyncStream<IncomingStream> {
    transfers.streams
  }

  /// Sends a data message (at most ``ProtocolLimits/maximumMessageSize`` bytes) to each peer.
  ///
  /// - Returns: The peers an unreliable message was dropped for (always empty when reliable).
  /// - Throws: ``TransferError/messageTooLarge(byteCount:)``; ``TransferError/notConnected(_:)``
  ///   for a peer not in the session (nothing is sent then); for a reliable message,
  ///   ``TransferError/peerDisconnected(reason:)`` if a link ends before the message is written.
  @discardableResult
  public func send(_ data: [UInt8], to peers: [PeerID], mode: SendMode = .reliable)
    async throws(TransferError) -> [PeerID]
  {
    guard data.count <= TransferMessage.maximumMessageSize else {
      throw .messageTooLarge(byteCount: data.count)
    }
    var links: [(PeerID, ConnectionLink)] = []
    for peer in peers {
      links.append((peer, try link(to: peer)))
    }
    let futures = links.map { peer, link in
      (peer, link.withMultiplexer { $0.sendMessage(data, reliable: mode == .reliable) })
    }
    var dropped: [PeerID] = []
    var firstError: TransferError?
    for (peer, future) in futures {
      do {
        if try await !future.get() { dropped.append(peer) }
      } catch {
        firstError =
          firstError ?? (error as? TransferError)
          ?? .peerDisconnected(reason: ErrorWords.describe(error))
      }
    }
    if let firstError { throw firstError }
    return dropped
  }

  /// Opens a named byte stream to `peer`.
  ///
  /// - Throws: ``TransferError/invalidStreamName(_:)``, ``TransferError/notConnected(_:)``.
  public func startStream(named name: String, to peer: PeerID) async throws(TransferError)
    -> StreamWriter
  {
    guard (1...TransferMessage.maximumNameSize).contains(name.utf8.count) else {
      throw .invalidStreamName(name)
    }
    let link = try link(to: peer)
    do {
      let channel = try await link.withMultiplexer { $0.openStream(named: name) }.get()
      return StreamWriter(name: name, peer: peer, channel: channel, link: link)
    } catch {
      throw (error as? TransferError) ?? .peerDisconnected(reason: ErrorWords.describe(error))
    }
  }

  func attachTransfers(of link: ConnectionLink, to peer: PeerID, version: UInt16) {
    transfers.attach(link, peer: peer, version: version)
  }
}
