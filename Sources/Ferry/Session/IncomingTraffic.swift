/// Which kinds of incoming traffic a session delivers to its application. What it does not
/// accept is refused without being buffered: a stream is reset ("refused"), a message dropped
/// (its credit returned at once). Files are governed by ``Session/receiveResources(_:)`` and
/// ``Session/askAboutResourceOffers()``.
public struct IncomingTraffic: OptionSet, Hashable, Sendable {
  /// The option bits.
  public let rawValue: Int

  /// Creates a set from its bits.
  public init(rawValue: Int) { self.rawValue = rawValue }

  /// Data messages (``Session/messages``).
  public static let messages = IncomingTraffic(rawValue: 1)
  /// Byte streams (``Session/incomingStreams``).
  public static let streams = IncomingTraffic(rawValue: 2)
  /// Messages and streams.
  public static let all: IncomingTraffic = [.messages, .streams]
}
