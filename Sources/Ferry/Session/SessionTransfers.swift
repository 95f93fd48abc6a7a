import Dispatch
internal import FerryWire
import NIOCore
import Synchronization

/// How a session answers offers of files.
enum ResourceReception: Sendable {
  /// Every offer is refused (the default).
  case refused
  /// Every valid offer is accepted into these options.
  case automatic(ReceiveOptions)
  /// Every valid offer is asked about on ``SessionTransfers/offers``.
  case asking
}

/// The session-wide receiving side: one buffer of messages from every peer, one stream of
/// incoming streams, offers and resource events.
final class SessionTransfers: Sendable {
  let messages: CreditedBuffer<ReceivedMessage>
  let streams: AsyncStream<IncomingStream>
  let resourceEvents: AsyncStream<ResourceEvent>
  let offers: AsyncStream<ResourceOffer>
  let reception = Mutex<ResourceReception>(.refused)
  let limits: SessionLimits
  let accepting: IncomingTraffic
  /// How long an accepted offer may go without progress.
  let stall: Duration
  /// Streams opened by peers that may wait for the application to take them from ``streams``
  /// (session-wide; an open-and-end loop would otherwise fill that buffer): more are refused.
  static let maximumWaitingStreams = 256
  /// Where each incoming offer runs its work (tests and the fuzzer run it inline).
  let makeExecutor: @Sendable () -> any OfferExecutor
  private let streamsContinuation: AsyncStream<IncomingStream>.Continuation
  private let resourceContinuation: AsyncStream<ResourceEvent>.Continuation
  private let offersContinuation: AsyncStream<ResourceOffer>.Continuation

  init(
    limits: SessionLimits, accepting: IncomingTraffic, stall: Duration,
    makeExecutor: @escaping @Sendable () -> any OfferExecutor
  ) {
    self.limits = limits
    self.stall = stall
    self.accepting = accepting
    self.makeExecutor = makeExecutor
    messages = CreditedBuffer { message in
      let size = message.data.count
      message.link.onMultiplexer { $0.consumed(size, channel: 0) }
    }
    (streams, streamsContinuation) = AsyncStream.makeStream(
      bufferingPolicy: .bufferingOldest(Self.maximumWaitingStreams))
    (resourceEvents, resourceContinuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    (offers, offersContinuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
  }

  /// Connects a link's multiplexer to this session (on the link's event loop).
  /// Receives what `peer` sends on `link`, speaking protocol `version` with it.
  func attach(_ link: ConnectionLink, peer: PeerID, version: UInt16) {
    let multiplexer = link.multiplexerOnLoop
    multiplexer.limits = limits
    multiplexer.protocolVersion = version
    if accepting.contains(.messages) {
      multiplexer.onMessage = { [messages] bytes in
        messages.push(ReceivedMessage(data: bytes, peer: peer, link: link))
      }
    }
    if accepting.contains(.streams) {
      multiplexer.onStream = { [streamsContinuation] channel, name in
        let stream = IncomingStream(name: name, peer: peer, channel: channel, link: link)
        if case .dropped = streamsContinuation.yield(stream) { return nil }  // refused
        return stream.inbox
      }
    }
    let questions = OpenQuestions(limit: limits.maximumIncomingOffers)
    multiplexer.onOffer = { [self] channel, files, digest throws(LinkLimitExceeded) in
      let reception: OfferReception
      switch self.reception.withLock({ $0 }) {
      case .refused: return nil
      case .automatic(let options): reception = .automatic(options)
      case .asking:
        guard let question = questions.open() else {
          throw LinkLimitExceeded(
            "more than \(questions.limit) offers waiting for the application's decision")
        }
        reception = .asking(question) { [offersContinuation] in offersContinuation.yield($0) }
      }
      return FerryOfferEndpoint.start(
        channel: channel, peer: peer, link: link, files: files,
        checksum: ChecksumAlgorithm(digest), reception: reception,
        holdsFiles: version >= WireProtocol.heldFilesVersion,
        events: self.resourceContinuation, executor: self.makeExecutor(), stall: self.stall)
    }
  }

  func finish() {
    messages.finish()
    streamsContinuation.finish()
    resourceContinuation.finish()
    offersContinuation.finish()
  }
}
