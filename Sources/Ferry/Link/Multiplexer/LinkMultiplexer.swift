internal import FerryWire
import NIOCore
import NIOPosix

/// Carries a connected link's session traffic — data messages, streams and offers — with
/// per-channel credit-based flow control (docs/PROTOCOL.md, "Flow control"), within the link's
/// ``SessionLimits``.
///
/// Sending: a frame on a channel waits until the peer has granted credit for its payload *and*
/// the connection is writable, so a slow receiver slows only the channel it is slow on, and a
/// peer that grants credit without reading cannot make this side buffer without bound.
/// Receiving: the peer may not exceed the credit granted; credit is granted back as the
/// application consumes; a peer may hold at most so many streams, unread bytes, offers and files
/// in flight, and replies it does not read. Any violation closes the link.
///
/// Event-loop confined, like ``ConnectionHandler``, after which it sits in the pipeline; the
/// connection handler forwards session frames only once connected.
final class LinkMultiplexer: ChannelInboundHandler {
  typealias InboundIn = WireFrame
  typealias OutboundOut = WireFrame

  /// The most credit a peer may grant on one channel in all: far above any window, so that only
  /// a broken or hostile peer reaches it (and sums cannot overflow).
  static let maximumCredit = 1 << 30

  var context: ChannelHandlerContext?
  let budget: LinkBudget
  var nextChannel: UInt32
  private let ownParity: UInt32
  /// Every open channel, by kind, with its own flow control, buffer and endpoint.
  var table = ChannelTable(messageWindow: TransferMessage.initialWindow(channel: 0))
  var ended: TransferError?
  /// Bytes of this link's messages and streams received and not yet read by the application.
  var unreadBytes = 0
  /// The highest channel the peer opened: its channel numbers only grow, so a number is never
  /// reused and nothing needs remembering about channels that ended.
  private var lastIncomingChannel: UInt32 = 0

  /// What the link may hold for the peer. Set by the session that adopts the link.
  var limits = SessionLimits() {
    didSet { budget.maximumQueuedReplies = limits.maximumQueuedReplies }
  }
  /// A data message arrived; nil when the session does not accept messages (they are dropped and
  /// their credit returned at once).
  var onMessage: (([UInt8]) -> Void)?
  /// The protocol version agreed with the peer. Set by the session that adopts the link.
  var protocolVersion: UInt16 = 1
  /// The peer offered files on a channel, to be checked with a digest; returns the endpoint for
  /// its frames, or nil to refuse.
  var onOffer:
    (
      (UInt32, [OfferedFile], DigestAlgorithm) throws(LinkLimitExceeded) -> ((OfferSignal) -> Void)?
    )?
  /// A stream was opened by the peer; returns the buffer its chunks go to, or nil to refuse it.
  var onStream: ((UInt32, String) -> CreditedBuffer<[UInt8]>?)?
  /// The link must close because the peer broke the protocol or a limit; the reason goes in
  /// the GOODBYE. Set by ``ConnectionPipeline`` to the connection handler.
  var onViolation: ((String) -> Void)?

  /// - Parameter isInviter: The inviter opens odd channel numbers, the advertiser even ones, so
  ///   that both can open channels without colliding.
  init(isInviter: Bool, budget: LinkBudget) {
    ownParity = isInviter ? 1 : 0
    nextChannel = isInviter ? 1 : 2
    self.budget = budget
  }

  func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
  }

  /// Drops the context: the context holds this handler, so keeping it would keep both (and what
  /// the callbacks hold) alive for ever once the channel is gone.
  func handlerRemoved(context: ChannelHandlerContext) {
    self.context = nil
  }

  // MARK: Receiving

  func channelWritabilityChanged(context: ChannelHandlerContext) {
    if context.channel.isWritable { drainAll() }
    context.fireChannelWritabilityChanged()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    guard ended == nil else { return }
    let frame = unwrapInboundIn(data)
    let id = frame.channel
    let size = frame.payload.readableBytes
    switch frame.type {
    case .message:
      guard table[0]?.inbound?.consume(size) == true else {
        return violation("data messages beyond the granted credit")
      }
      guard let onMessage else {
        // Not accepted here: dropped, and the peer may send again.
        return grant(size, channel: 0)
      }
      guard receiveUnread(size) else { return }
      onMessage(Array(frame.payload.readableBytesView))
    case .streamData:
      guard case .incomingStream(let flow, let buffer)? = table[id] else {
        // Data racing our own RESET of this stream is dropped; anything else is an error.
        return id % 2 != ownParity ? () : violation("data on an unknown stream")
      }
      guard flow.consume(size) else { return violation("stream data beyond the granted credit") }
      guard receiveUnread(size) else { return }
      buffer.push(Array(frame.payload.readableBytesView))
    case .chunk, .hole:
      guard frame.type == .chunk || protocolVersion >= WireProtocol.digestChoiceVersion else {
        return violation("a HOLE frame in protocol version \(protocolVersion)")
      }
      guard case .incomingOffer(let flow, let endpoint, _)? = table[id] else {
        return id % 2 != ownParity ? () : violation("data for an unknown offer")
      }
      guard flow.consume(size) else { return violation("file data beyond the granted credit") }
      endpoint(.frame(frame))
    case .offer:
      receiveOffer(frame, channel: id)
    case .offerAccept, .fileAck:
      // The receiver's answers: only on an offer this side made.
      switch table[id] {
      case .outgoingOffer(_, let endpoint)?: endpoint(.frame(frame))
      case nil where id % 2 == ownParity: return  // an offer of ours already gone
      default: violation("\(frame.type) on a channel this side did not offer on")
      }
    case .fileEnd:
      // The sender's end of a file: only on an offer the peer made, one per file (queued
      // behind the disk, so counted rather than credited).
      switch table[id] {
      case .incomingOffer(let flow, let endpoint, _)?:
        guard flow.consumeUncredited() else {
          return violation("more FILE_END frames than twice the files of offer \(id)")
        }
        endpoint(.frame(frame))
      case nil where id % 2 != ownParity: return  // racing our RESET of that offer
      default: violation("FILE_END on a channel the peer did not offer on")
      }
    case .reset where table[id]?.endpoint != nil:
      // The offer reads the peer's reason from the frame itself.
      close(id, .reset(frame, reason: ""))
    case .credit, .streamOpen, .streamEnd, .reset:
      let message: TransferMessage
      do {
        message = try TransferMessage(frame: frame.flat)
      } catch {
        return violation("\(error)")
      }
      handle(message, frame)
    default:
      violation("unexpected \(frame.type) frame")
    }
  }

  private func receiveOffer(_ frame: WireFrame, channel id: UInt32) {
    let files: [OfferedFile]
    let digest: DigestAlgorithm
    do {
      guard case .offer(_, let decoded, let algorithm) = try ResourceMessage(frame: frame.flat)
      else { return }
      (files, digest) = (decoded, algorithm)
    } catch {
      return violation("\(error)")
    }
    if protocolVersion < WireProtocol.digestChoiceVersion {
      guard digest == .sha256 else {
        return violation("a digest choice in a version \(protocolVersion) OFFER")
      }
      guard !files.contains(where: \.isFolder) else {
        return violation("a folder in a version \(protocolVersion) OFFER")
      }
    }
    if protocolVersion < WireProtocol.streamedFilesVersion, files.contains(where: \.isStreamed) {
      return violation("a streamed file in a version \(protocolVersion) OFFER")
    }
    guard opensChannel(id, "offer") else { return }
    guard table.incomingOffers < limits.maximumIncomingOffers else {
      return exceeded("more than \(limits.maximumIncomingOffers) offers open at once")
    }
    guard table.filesInFlight + files.count <= limits.maximumFilesInFlight else {
      return exceeded("more than \(limits.maximumFilesInFlight) files in open offers")
    }
    let admitted: ((OfferSignal) -> Void)?
    do {
      admitted = try onOffer?(id, files, digest)
    } catch {
      return violation(error.description)
    }
    guard let endpoint = admitted else {
      return reply([
        TransferMessage.reset(channel: id, .refused, reason: "this peer does not accept files")
          .frame
      ])
    }
    // A held file may end twice: its digest first, then the file itself when the content
    // differs.
    let flow = InboundFlow(
      window: ResourceMessage.initialWindow, uncreditedFrames: 2 * files.count)
    _ = table.open(id, .incomingOffer(flow, endpoint: endpoint, files: files.count))
  }

  private func handle(_ message: TransferMessage, _ frame: WireFrame) {
    switch message {
    case .credit(let id, let bytes):
      guard let flow = table[id]?.outbound else { return }  // a channel already gone
      guard flow.addCredit(Int(bytes), maximum: Self.maximumCredit) else {
        return violation("credit beyond any window on channel \(id)")
      }
      drain(channel: id)
    case .streamOpen(let id, let name):
      guard opensChannel(id, "stream") else { return }
      guard table.incomingStreams < limits.maximumIncomingStreams else {
        return exceeded("more than \(limits.maximumIncomingStreams) streams open at once")
      }
      guard let buffer = onStream?(id, name) else {
        return reply([
          TransferMessage.reset(channel: id, .refused, reason: "this peer takes no streams now")
            .frame
        ])
      }
      let flow = InboundFlow(window: TransferMessage.initialWindow(channel: id))
      _ = table.open(id, .incomingStream(flow, buffer: buffer))
    case .streamEnd(let id):
      guard case .incomingStream? = table[id] else {
        return id % 2 != ownParity ? () : violation("end of an unknown stream")
      }
      close(id, .finished)
    case .reset(let id, _, let reason):
      guard case .outgoingStream(let flow)? = table[id] else {
        return close(id, .reset(frame, reason: reason))
      }
      // Kept, closed, so that the writer learns why at its next write; it goes when the
      // writer finishes or cancels.
      flow.closed = .cancelledByPeer(reason: reason)
      flow.fail(.cancelledByPeer(reason: reason))
    case .message, .streamData:
      break  // handled on the fast path
    }
  }

  /// Counts `bytes` more as received and unread; false (and the link closing) beyond the limit.
  private func receiveUnread(_ bytes: Int) -> Bool {
    unreadBytes += SessionLimits.unreadCost(bytes)
    guard unreadBytes <= limits.maximumUnreadBytes else {
      exceeded("more than \(limits.maximumUnreadBytes) bytes unread")
      return false
    }
    return true
  }

  /// Whether the peer may open channel `id` (a `kind`): its parity is the peer's, and its number
  /// is above the last one the peer opened. Closes the link otherwise.
  private func opensChannel(_ id: UInt32, _ kind: String) -> Bool {
    guard id % 2 != ownParity, id > lastIncomingChannel else {
      violation("invalid \(kind) channel \(id)")
      return false
    }
    lastIncomingChannel = id
    return true
  }

  /// Closes the link: the peer went beyond one of its limits (`what`).
  func exceeded(_ what: String) {
    violation(LinkLimitExceeded(what).description)
  }

  /// Closes the link: the peer broke the protocol or a limit. Nothing more is read or sent on
  /// it meanwhile.
  private func violation(_ reason: String) {
    guard ended == nil else { return }
    ended = .peerDisconnected(reason: reason)
    onViolation?(reason)
  }

  func channelInactive(context: ChannelHandlerContext) {
    let reason = budget.endReason ?? "the connection closed"
    ended = .peerDisconnected(reason: reason)
    for channel in table.removeAll() {
      _ = channel.end(.linkEnded(reason))
    }
    onOffer = nil
    onMessage = nil
    onStream = nil
    onViolation = nil
    context.fireChannelInactive()
  }
}
