internal import FerryWire
import NIOCore

/// The Ferry wire's front end of an incoming offer: the offer channel's frames (CHUNK, HOLE,
/// FILE_END, RESET) handed to an ``IncomingOffer``, and its answers (OFFER_ACCEPT, FILE_ACK,
/// CREDIT, RESET) written on the channel (``FerryOfferAnswers``).
enum FerryOfferEndpoint {
  /// Starts receiving `files` offered on `channel` of `link`; returns where the channel's
  /// frames and the link's end go (on the link's event loop, in order).
  static func start(
    channel: UInt32, peer: PeerID, link: ConnectionLink, files: [OfferedFile],
    checksum: ChecksumAlgorithm, reception: OfferReception, holdsFiles: Bool,
    events: AsyncStream<ResourceEvent>.Continuation, executor: any OfferExecutor,
    stall: Duration
  ) -> @Sendable (OfferSignal) -> Void {
    let offer = IncomingOffer(
      peer: peer, files: files.map { TransferFile($0) }, checksum: checksum,
      reception: reception, holdsFiles: holdsFiles, events: events, executor: executor,
      stall: stall, frontEnd: FerryOfferAnswers(channel: channel, link: link))
    offer.start()
    return { signal in receive(signal, into: offer) }
  }

  /// One signal of the offer's channel, decoded and handed over.
  static func receive(_ signal: OfferSignal, into offer: IncomingOffer) {
    switch signal {
    case .linkClosed(let reason):
      offer.linkClosed(reason: reason)
    case .frame(let received):
      // A small payload is a slice of the decoder's (much larger) buffer; holding it while the
      // disk catches up would pin that whole buffer. Copy small ones out.
      var frame = received
      if frame.payload.readableBytes < 64 << 10 {
        frame.payload = ByteBuffer(bytes: frame.payload.readableBytesView)
      }
      switch frame.type {
      case .chunk:
        let credit = frame.payload.readableBytes
        var payload = frame.payload
        guard let index = payload.readInteger(as: UInt32.self).map(Int.init) else {
          return offer.violation("malformed CHUNK")
        }
        offer.data(index, .bytes(payload), credit: credit)
      case .hole:
        guard case .hole(_, let file, let length)? = try? ResourceMessage(frame: frame.flat) else {
          return offer.violation("malformed HOLE")
        }
        offer.data(Int(file), .hole(length), credit: frame.payload.readableBytes)
      case .fileEnd:
        guard case .fileEnd(_, let file, let digest)? = try? ResourceMessage(frame: frame.flat)
        else { return offer.violation("malformed FILE_END") }
        offer.fileEnded(Int(file), digest: digest)
      case .reset:
        let reason = (try? TransferMessage(frame: frame.flat)).flatMap { message -> String? in
          if case .reset(_, _, let reason) = message { return reason }
          return nil
        }
        offer.senderReset(reason: reason ?? "")
      default:
        break
      }
    }
  }
}

/// What an incoming offer says to its sender on the Ferry wire: frames on its channel, queued
/// on the link's multiplexer.
struct FerryOfferAnswers: IncomingOfferFrontEnd {
  let channel: UInt32
  let link: ConnectionLink

  func accept(_ starts: [FileStart]) {
    let (offsets, held) = FileStart.wire(starts)
    let frame = ResourceMessage.offerAccept(channel: channel, offsets: offsets, held: held).frame
    link.onMultiplexer { $0.answerOffer(frame) }
  }

  func acknowledge(_ acks: [FileAck]) {
    let frames = acks.map(frame)
    link.onMultiplexer { $0.answerOffer(frames) }
  }

  func grant(_ bytes: Int) {
    let channel = self.channel
    link.onMultiplexer { $0.grant(bytes, channel: channel) }
  }

  func reset(reason: String, cause: OfferEnd) {
    let code = TransferMessage.ResetCode(cause)
    let frame = TransferMessage.reset(channel: channel, code, reason: reason).frame
    link.onMultiplexer { $0.answerOffer(frame) }
  }

  func cancel(reason: String) {
    // The multiplexer forgets the channel, dropping the chunks still on their way.
    let channel = self.channel
    link.onMultiplexer {
      $0.reset(channel: channel, .cancelled, reason: reason, error: .cancelled)
    }
  }

  func close(after acks: [FileAck], then: @escaping @Sendable () -> Void) {
    let (channel, frames) = (self.channel, acks.map(frame))
    link.onMultiplexer(
      { multiplexer in
        if !frames.isEmpty { multiplexer.answerOffer(frames) }
        multiplexer.closeOffer(channel: channel)
      }, then: then)
  }

  private func frame(_ ack: FileAck) -> Frame {
    ResourceMessage.fileAck(
      channel: channel, file: UInt32(ack.index), ResourceMessage.FileStatus(ack.status),
      reason: ack.reason
    ).frame
  }
}
