internal import FerryWire
import NIOCore
import NIOPosix

/// What this side sends on the link: data messages, streams and offers, each waiting for the
/// peer's credit and the connection's room; the peer's credit back and this side's replies.
extension LinkMultiplexer {
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
  func close(_ id: UInt32, _ cause: ChannelEnd) {
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
  func drain(channel id: UInt32) {
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
  func drainAll() {
    for id in table.waitingChannels {
      guard context?.channel.isWritable == true else { return }
      drain(channel: id)
    }
  }

  /// Writes frames this side owes the peer (credit, acknowledgements, refusals) and flushes:
  /// if the peer has left too many of them unread, its link is closed instead.
  func reply(_ frames: [Frame]) {
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
}
