import Dispatch
import NIOCore
import Synchronization

/// A data message received from a peer.
public struct ReceivedMessage: Sendable {
  /// The bytes.
  public let data: [UInt8]
  /// Who sent them.
  public let peer: PeerID
  let link: ConnectionLink
}
