import Synchronization

/// Names one offer received in this process: the ``ResourceOffer`` asked about and the
/// ``IncomingTransfer`` that receives it share it, so that an application can tell which
/// transfer carries the offer it decided on (an offer's end from another link, or another
/// offer of the same peer, is not that one's). Unique within the process; never reused.
public struct OfferID: Hashable, Sendable, CustomStringConvertible {
  private let value: UInt64
  private static let counter = Atomic<UInt64>(0)

  /// A new identifier. Any thread.
  static func next() -> OfferID {
    OfferID(value: counter.add(1, ordering: .relaxed).newValue)
  }

  private init(value: UInt64) { self.value = value }

  /// `offer N`.
  public var description: String { "offer \(value)" }
}
