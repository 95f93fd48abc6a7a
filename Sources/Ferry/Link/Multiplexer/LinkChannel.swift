/// What an offer's endpoint hears: its channel's frames, or that the link closed.
enum OfferSignal {
  case frame(WireFrame)
  case linkClosed(String)
}

/// Why a channel ends, which decides what each kind of channel tells its users.
enum ChannelEnd {
  /// This side abandoned it (the application cancelled, an offer failed or completed).
  case local(TransferError)
  /// The peer sent RESET (the frame goes to an offer's endpoint, which reads its reason).
  case reset(WireFrame, reason: String)
  /// The stream's sender ended it cleanly (STREAM_END).
  case finished
  /// The link closed.
  case linkEnded(String)
}

/// One channel of a link, by kind; each kind carries its own flow control, buffer and endpoint
/// (docs/PROTOCOL.md, "Channels"). Event-loop confined.
enum LinkChannel {
  /// Channel 0: data messages, both ways.
  case messages(OutboundFlow, InboundFlow)
  /// A stream this side opened.
  case outgoingStream(OutboundFlow)
  /// A stream the peer opened: its chunks go to `buffer` for the application.
  case incomingStream(InboundFlow, buffer: CreditedBuffer<[UInt8]>)
  /// An offer this side made: the peer's answers go to `endpoint`.
  case outgoingOffer(OutboundFlow, endpoint: (OfferSignal) -> Void)
  /// An offer the peer made, of `files` files: its frames go to `endpoint`.
  case incomingOffer(InboundFlow, endpoint: (OfferSignal) -> Void, files: Int)

  /// The sending side, for the kinds this side sends on.
  var outbound: OutboundFlow? {
    switch self {
    case .messages(let flow, _), .outgoingStream(let flow), .outgoingOffer(let flow, _): flow
    case .incomingStream, .incomingOffer: nil
    }
  }

  /// The receiving side, for the kinds the peer sends on.
  var inbound: InboundFlow? {
    switch self {
    case .messages(_, let flow), .incomingStream(let flow, _), .incomingOffer(let flow, _, _): flow
    case .outgoingStream, .outgoingOffer: nil
    }
  }

  /// The endpoint of an offer channel.
  var endpoint: ((OfferSignal) -> Void)? {
    switch self {
    case .outgoingOffer(_, let endpoint), .incomingOffer(_, let endpoint, _): endpoint
    case .messages, .outgoingStream, .incomingStream: nil
    }
  }

  /// Ends the channel, once it is out of its table, for every kind alike: frames waiting to
  /// be sent fail, an incoming stream's buffer finishes, an offer's endpoint is told (unless
  /// the offer itself ended it). Returns the unread bytes it threw away (a stream this side
  /// abandoned is not read any more).
  func end(_ cause: ChannelEnd) -> Int {
    switch self {
    case .messages(let flow, _):
      flow.fail(cause.senderError(offer: false))
      return 0
    case .outgoingStream(let flow):
      flow.fail(cause.senderError(offer: false))
      return 0
    case .outgoingOffer(let flow, let endpoint):
      // The endpoint first: it records the cause (the peer's RESET) before the frames' failure
      // wakes the sending task, which reports the first cause recorded.
      cause.tell(endpoint)
      flow.fail(cause.senderError(offer: true))
      return 0
    case .incomingOffer(_, let endpoint, _):
      cause.tell(endpoint)
      return 0
    case .incomingStream(_, let buffer):
      var discarded = 0
      switch cause {
      case .local(let error):
        discarded = buffer.discardBuffered().reduce(0) { $0 + SessionLimits.unreadCost($1.count) }
        buffer.finish(.failure(error))
      case .reset(_, let reason):
        buffer.finish(.failure(.cancelledByPeer(reason: reason)))
      case .finished:
        buffer.finish()
      case .linkEnded(let reason):
        buffer.finish(.failure(.peerDisconnected(reason: reason)))
      }
      return discarded
    }
  }
}

extension ChannelEnd {
  /// What a frame still waiting to be sent fails with.
  fileprivate func senderError(offer: Bool) -> TransferError {
    switch self {
    case .local(let error): error
    // An offer has already recorded the peer's reason from the RESET it was given.
    case .reset(_, let reason): offer ? .streamClosed : .cancelledByPeer(reason: reason)
    case .finished: .streamClosed
    case .linkEnded(let reason): .peerDisconnected(reason: reason)
    }
  }

  /// Tells an offer's endpoint, unless the offer ended the channel itself.
  fileprivate func tell(_ endpoint: (OfferSignal) -> Void) {
    switch self {
    case .reset(let frame, _): endpoint(.frame(frame))
    case .linkEnded(let reason): endpoint(.linkClosed(reason))
    case .local, .finished: break
    }
  }
}
