/// Every open channel of a link, by number, and what the peer holds open in all (for
/// ``SessionLimits``). Removing a channel hands it back so that it can be ended
/// (``LinkChannel/end(_:)``) outside any access to the table: ending one runs callbacks that
/// may open or close others. Channel 0 (data messages) is always there. Event-loop confined.
struct ChannelTable {
  private var channels: [UInt32: LinkChannel]
  /// Streams the peer has open.
  private(set) var incomingStreams = 0
  /// Offers the peer has open, and the files in them.
  private(set) var incomingOffers = 0
  private(set) var filesInFlight = 0

  /// A table holding channel 0 with `messageWindow` of credit each way.
  init(messageWindow: Int) {
    channels = [
      0: .messages(OutboundFlow(credit: messageWindow), InboundFlow(window: messageWindow))
    ]
  }

  subscript(id: UInt32) -> LinkChannel? { channels[id] }

  /// The channels with frames waiting to be sent, data messages first, then by number.
  var waitingChannels: [UInt32] {
    channels.filter { $0.value.outbound?.hasWaiters == true }.keys.sorted()
  }

  /// Adds a channel; false, changing nothing, when number `id` is 0 or taken.
  mutating func open(_ id: UInt32, _ channel: LinkChannel) -> Bool {
    guard id != 0, channels[id] == nil else { return false }
    channels[id] = channel
    count(channel, 1)
    return true
  }

  /// Takes channel `id` out of the table; end what it returns. Channel 0 stays.
  mutating func remove(_ id: UInt32) -> LinkChannel? {
    guard id != 0, let channel = channels.removeValue(forKey: id) else { return nil }
    count(channel, -1)
    return channel
  }

  /// Takes every channel out, channel 0 included: the link ended.
  mutating func removeAll() -> [LinkChannel] {
    defer {
      channels = [:]
      (incomingStreams, incomingOffers, filesInFlight) = (0, 0, 0)
    }
    return channels.keys.sorted().compactMap { channels[$0] }
  }

  private mutating func count(_ channel: LinkChannel, _ sign: Int) {
    switch channel {
    case .incomingStream: incomingStreams += sign
    case .incomingOffer(_, _, let files):
      incomingOffers += sign
      filesInFlight += sign * files
    case .messages, .outgoingStream, .outgoingOffer: break
    }
  }
}
