import Dispatch
import NIOCore
import Synchronization

/// A stream a peer opened to this session. Read ``chunks`` (each chunk read lets the sender send
/// that much more) or ``cancel()`` it.
public final class IncomingStream: Sendable {
  /// The name the sender gave.
  public let name: String
  /// The sender.
  public let peer: PeerID
  /// The stream's bytes as they arrive; ends cleanly when the sender finishes, or throws
  /// ``TransferError`` when it cancels or disconnects.
  public let chunks: CreditedSequence<[UInt8]>

  private let channel: UInt32
  private let link: ConnectionLink
  private let buffer: CreditedBuffer<[UInt8]>

  init(name: String, peer: PeerID, channel: UInt32, link: ConnectionLink) {
    self.name = name
    self.peer = peer
    self.channel = channel
    self.link = link
    let buffer = CreditedBuffer<[UInt8]> { chunk in
      link.onMultiplexer { $0.consumed(chunk.count, channel: channel) }
    }
    self.buffer = buffer
    self.chunks = CreditedSequence(buffer: buffer)
  }

  /// Stops receiving: the sender's writes fail with ``TransferError/cancelledByPeer(reason:)``.
  public func cancel(reason: String = "") {
    let channel = self.channel
    link.onMultiplexer {
      $0.reset(channel: channel, .cancelled, reason: reason, error: .cancelled)
    }
  }

  var inbox: CreditedBuffer<[UInt8]> { buffer }
}
