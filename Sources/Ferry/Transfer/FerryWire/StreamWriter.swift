internal import FerryWire
import NIOCore

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
        throw (error as? TransferError) ?? .peerDisconnected(reason: ErrorWords.describe(error))
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
      throw (error as? TransferError) ?? .peerDisconnected(reason: ErrorWords.describe(error))
    }
  }

  /// Abandons the stream; the receiver's sequence throws ``TransferError/cancelledByPeer(reason:)``.
  public func cancel(reason: String = "") {
    let channel = self.channel
    link.onMultiplexer { $0.reset(channel: channel, .cancelled, reason: reason, error: .cancelled) }
  }
}
