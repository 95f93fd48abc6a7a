import FerryWire
import NIOCore

/// How ``Session/send(_:to:mode:)`` treats a busy link.
public enum SendMode: Hashable, Sendable {
  /// Ordered and delivered to the peer's connection, waiting for flow-control credit if the
  /// peer is slow; fails only if the peer disconnects.
  case reliable
  /// Best effort: dropped at once, never waiting, when the peer's credit is used up or the
  /// connection's send buffer is full.
  case unreliable
}

extension Session {
  /// Data messages from every peer, in arrival order per peer. Each message taken gives its
  /// sender credit for another; a session that does not read slows its senders down rather
  /// than buffering without bound.
  public var messages: CreditedSequence<ReceivedMessage> {
    CreditedSequence(buffer: transfers.messages)
  }

  /// Streams opened by peers.
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
          firstError ?? (error as? TransferError) ?? .peerDisconnected(reason: "\(error)")
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
      throw (error as? TransferError) ?? .peerDisconnected(reason: "\(error)")
    }
  }

  func attachTransfers(of link: ConnectionLink, to peer: PeerID) {
    transfers.attach(link, peer: peer)
  }
}

/// The sending end of a stream. ``write(_:)`` suspends while the receiver is behind
/// (backpressure); ``finish()`` ends the stream cleanly.
public final class StreamWriter: Sendable {
  /// The stream's name.
  public let name: String
  /// The receiving peer.
  public let peer: PeerID
  private let channel: UInt32
  private let link: ConnectionLink

  init(name: String, peer: PeerID, channel: UInt32, link: ConnectionLink) {
    self.name = name
    self.peer = peer
    self.channel = channel
    self.link = link
  }

  /// Writes bytes, in chunks of at most 256 KiB; suspends until the receiver has room for them.
  ///
  /// - Throws: ``TransferError/cancelledByPeer(reason:)`` if the receiver cancelled,
  ///   ``TransferError/peerDisconnected(reason:)``, ``TransferError/streamClosed`` after
  ///   ``finish()`` or ``cancel(reason:)``.
  public func write(_ bytes: [UInt8]) async throws(TransferError) {
    var offset = 0
    let channel = self.channel
    repeat {
      let end = min(offset + TransferMessage.maximumChunkSize, bytes.count)
      let chunk = Array(bytes[offset..<end])
      do {
        try await link.withMultiplexer { multiplexer in
          multiplexer.sendStreamData(ByteBuffer(bytes: chunk), channel: channel)
        }.get()
      } catch {
        throw (error as? TransferError) ?? .peerDisconnected(reason: "\(error)")
      }
      offset = end
    } while offset < bytes.count
  }

  /// Ends the stream; the receiver's sequence finishes after the last chunk.
  ///
  /// - Throws: as ``write(_:)``.
  public func finish() async throws(TransferError) {
    let channel = self.channel
    do {
      try await link.withMultiplexer { $0.endStream(channel: channel) }.get()
    } catch {
      throw (error as? TransferError) ?? .peerDisconnected(reason: "\(error)")
    }
  }

  /// Abandons the stream; the receiver's sequence throws ``TransferError/cancelledByPeer(reason:)``.
  public func cancel(reason: String = "") {
    let channel = self.channel
    link.onMultiplexer { $0.reset(channel: channel, .cancelled, reason: reason, error: .cancelled) }
  }
}
