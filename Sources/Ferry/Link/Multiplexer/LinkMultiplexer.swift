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

  private var context: ChannelHandlerContext?
  private let budget: LinkBudget
  private var nextChannel: UInt32
  private let ownParity: UInt32
  /// Every open channel, by kind, with its own flow control, buffer and endpoint.
  private var table = ChannelTable(messageWindow: TransferMessage.initialWindow(channel: 0))
  private var ended: TransferError?
  /// Bytes of this link's messages and streams received and not yet read by the application.
  private var unreadBytes = 0
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

  // MARK: Sending (event loop only)

  /// Sends a data message. Reliable: waits for credit. Unreliable: sent only if credit is
  /// available and the socket is writable now, else dropped (the future gives false).
  func sendMessage(_ bytes: [UInt8], reliable: Bool) -> EventLoopFuture<Bool> {
    guard let context else { return failedWithoutContext() }
    if let ended { return failed(ended, context) }
    let frame = WireFrame(
      type: .message, channel: 0, payload: context.channel.allocator.buffer(bytes: bytes))
    if !reliable {
      guard table[0]?.outbound?.canSendNow(bytes.count) == true, context.channel.isWritable
      else { return context.eventLoop.makeSucceededFuture(false) }
    }
    return enqueue(frame, size: bytes.count, channel: 0, context: context).map { true }
  }

  /// Opens a stream; returns its channel number.
  func openStream(named name: String) -> EventLoopFuture<UInt32> {
    guard let context else { return failedWithoutContext() }
    if let ended { return failed(ended, context) }
    let id = nextChannel
    guard
      table.open(
        id, .outgoingStream(OutboundFlow(credit: TransferMessage.initialWindow(channel: id))))
    else { return failed(.streamClosed, context) }
    nextChannel &+= 2
    write(TransferMessage.streamOpen(channel: id, name: name).frame, context: context)
    return context.eventLoop.makeSucceededFuture(id)
  }

  /// Sends stream bytes once the peer has credit for them; completes when handed to the channel.
  func sendStreamData(_ bytes: ByteBuffer, channel id: UInt32) -> EventLoopFuture<Void> {
    guard let context else { return failedWithoutContext() }
    if let problem = sendingProblem(id) { return failed(problem, context) }
    return enqueue(
      WireFrame(type: .streamData, channel: id, payload: bytes), size: bytes.readableBytes,
      channel: id, context: context)
  }

  /// Ends a stream cleanly; completes when STREAM_END is written (after all its data).
  func endStream(channel id: UInt32) -> EventLoopFuture<Void> {
    guard let context else { return failedWithoutContext() }
    if let problem = sendingProblem(id) {
      // A stream the peer reset is done with once its writer has heard why.
      if case .cancelledByPeer = problem { close(id, .local(problem)) }
      return failed(problem, context)
    }
    table[id]?.outbound?.closed = .streamClosed
    return enqueue(
      WireFrame(type: .streamEnd, channel: id, payload: ByteBuffer()), size: 0, channel: id,
      context: context)
  }

  /// Abandons a channel, telling the peer (RESET): whatever waits on it fails with `error`.
  func reset(
    channel id: UInt32, _ code: TransferMessage.ResetCode, reason: String, error: TransferError
  ) {
    guard context != nil, ended == nil else { return }
    close(id, .local(error))
    reply([TransferMessage.reset(channel: id, code, reason: reason).frame])
  }

  /// Offers files on a new channel whose answers go to `endpoint`, to be checked with `digest`
  /// (SHA-256 whatever was asked when the peer's protocol version predates the choice); returns
  /// the channel, the digest it uses and whether the peer takes HOLE frames.
  func openOffer(
    _ files: [OfferedFile], digest requested: DigestAlgorithm = .sha256,
    endpoint: @escaping (OfferSignal) -> Void
  ) -> EventLoopFuture<(channel: UInt32, digest: DigestAlgorithm, holes: Bool)> {
    guard let context else { return failedWithoutContext() }
    if let ended { return failed(ended, context) }
    let id = nextChannel
    let flow = OutboundFlow(credit: ResourceMessage.initialWindow)
    guard table.open(id, .outgoingOffer(flow, endpoint: endpoint)) else {
      return failed(.streamClosed, context)
    }
    nextChannel &+= 2
    let current = protocolVersion >= WireProtocol.digestChoiceVersion
    let digest = current ? requested : .sha256
    write(ResourceMessage.offer(channel: id, files: files, digest: digest).frame, context: context)
    return context.eventLoop.makeSucceededFuture((id, digest, current))
  }

  /// Queues resource frames on an offer channel, in order, and flushes once; the future is the
  /// last one's. CHUNK and HOLE frames wait for credit (their whole payload counts); the others
  /// only keep their place in the channel's order.
  func sendResourceFrames(_ frames: [WireFrame], channel id: UInt32) -> EventLoopFuture<Void> {
    guard let context else { return failedWithoutContext() }
    if let problem = sendingProblem(id) { return failed(problem, context) }
    var last = context.eventLoop.makeSucceededVoidFuture()
    for frame in frames {
      let size = frame.type == .chunk || frame.type == .hole ? frame.payload.readableBytes : 0
      last = enqueue(frame, size: size, channel: id, context: context, drainNow: false)
    }
    drain(channel: id)  // one flush for the batch
    return last
  }

  /// Sends frames on an incoming offer's channel (OFFER_ACCEPT, FILE_ACK, RESET), flushed once.
  /// They are replies to the peer: a peer that does not read them closes its link.
  func answerOffer(_ frames: [Frame]) {
    reply(frames)
  }

  /// Sends a frame on an incoming offer's channel.
  func answerOffer(_ frame: Frame) {
    answerOffer([frame])
  }

  /// Forgets an offer channel (it completed, or was reset): frames still waiting on it fail.
  func closeOffer(channel id: UInt32) {
    close(id, .local(.streamClosed))
  }

  /// The application took `bytes` of what arrived on an incoming channel (a message on 0, or a
  /// stream's chunk): they no longer count as unread, and the peer gets that much credit back.
  func consumed(_ bytes: Int, channel id: UInt32) {
    unreadBytes -= SessionLimits.unreadCost(bytes)
    grant(bytes, channel: id)
  }

  /// Grants the peer `bytes` more on an incoming channel (batched into CREDIT frames).
  func grant(_ bytes: Int, channel id: UInt32) {
    guard context != nil, ended == nil, bytes > 0 else { return }
    // Nothing is owed on a channel that closed meanwhile.
    guard let total = table[id]?.inbound?.grant(bytes) else { return }
    reply([TransferMessage.credit(channel: id, bytes: UInt32(clamping: total)).frame])
  }

  /// Ends channel `id`, whatever its kind (``LinkChannel/end(_:)``): its waiting frames fail,
  /// its buffer finishes, its endpoint is told.
  private func close(_ id: UInt32, _ cause: ChannelEnd) {
    guard let channel = table.remove(id) else { return }
    unreadBytes -= channel.end(cause)
  }

  /// Why nothing may be sent on channel `id` now, or nil.
  private func sendingProblem(_ id: UInt32) -> TransferError? {
    if let ended { return ended }
    guard let flow = table[id]?.outbound else { return .streamClosed }
    return flow.closed
  }

  private func enqueue(
    _ frame: WireFrame, size: Int, channel id: UInt32, context: ChannelHandlerContext,
    drainNow: Bool = true
  ) -> EventLoopFuture<Void> {
    let promise = context.eventLoop.makePromise(of: Void.self)
    guard let flow = table[id]?.outbound else {
      promise.fail(TransferError.streamClosed)
      return promise.futureResult
    }
    flow.enqueue(OutboundFlow.Waiter(frame: frame, size: size, promise: promise))
    if drainNow { drain(channel: id) }
    return promise.futureResult
  }

  /// Writes the channel's waiting frames, in order, while its credit allows and the connection
  /// is writable. An outgoing stream whose STREAM_END is out has nothing left to do and goes.
  private func drain(channel id: UInt32) {
    guard let context, context.channel.isWritable, let channel = table[id],
      let flow = channel.outbound, flow.hasWaiters
    else { return }
    let written = flow.drain { context.write(wrapOutboundOut($0), promise: nil) }
    guard written > 0 else { return }
    context.flush()
    if case .outgoingStream = channel, flow.closed != nil, !flow.hasWaiters {
      close(id, .finished)
    }
  }

  /// Drains every channel with waiting frames, data messages first.
  private func drainAll() {
    for id in table.waitingChannels {
      guard context?.channel.isWritable == true else { return }
      drain(channel: id)
    }
  }

  /// Writes frames this side owes the peer (credit, acknowledgements, refusals) and flushes:
  /// if the peer has left too many of them unread, its link is closed instead.
  private func reply(_ frames: [Frame]) {
    guard let context, ended == nil, !frames.isEmpty else { return }
    guard let written = budget.reply(on: context.eventLoop) else {
      return exceeded(
        "the peer does not read what it is sent (\(limits.maximumQueuedReplies) replies wait)")
    }
    for (index, frame) in frames.enumerated() {
      context.write(
        wrapOutboundOut(WireFrame(frame, allocator: context.channel.allocator)),
        promise: index == frames.count - 1 ? written : nil)
    }
    context.flush()
  }

  private func write(_ frame: Frame, context: ChannelHandlerContext) {
    context.writeAndFlush(
      wrapOutboundOut(WireFrame(frame, allocator: context.channel.allocator)), promise: nil)
  }

  private func failed<T>(_ error: TransferError, _ context: ChannelHandlerContext)
    -> EventLoopFuture<T>
  {
    context.eventLoop.makeFailedFuture(error)
  }

  /// Before the handler is added or after it is removed: there is no loop to report on but one
  /// of the global group.
  private func failedWithoutContext<T>() -> EventLoopFuture<T> {
    MultiThreadedEventLoopGroup.singleton.any().makeFailedFuture(
      ended ?? TransferError.peerDisconnected(reason: "no connection"))
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
  private func exceeded(_ what: String) {
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
