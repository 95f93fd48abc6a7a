import FerryWire
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

  private struct Waiter {
    let frame: WireFrame
    let size: Int
    let promise: EventLoopPromise<Void>
  }

  /// The most credit a peer may grant on one channel in all: far above any window, so that only
  /// a broken or hostile peer reaches it (and sums cannot overflow).
  static let maximumCredit = 1 << 30

  private var context: ChannelHandlerContext?
  private let budget: LinkBudget
  private var nextStreamID: UInt32
  private let ownParity: UInt32
  private var sendCredit: [UInt32: Int] = [0: TransferMessage.initialWindow(channel: 0)]
  private var waiters: [UInt32: [Waiter]] = [:]
  private var outgoingStreams: [UInt32: TransferError?] = [:]
  private var allowance: [UInt32: Int] = [0: TransferMessage.initialWindow(channel: 0)]
  private var pendingGrant: [UInt32: Int] = [:]
  private var incomingStreams: [UInt32: CreditedBuffer<[UInt8]>] = [:]
  private var ended: TransferError?
  /// Bytes of this link's messages and streams received and not yet read by the application.
  private var unreadBytes = 0
  /// Files in each open incoming offer.
  private var incomingOfferFiles: [UInt32: Int] = [:]
  /// The highest channel the peer opened: its channel numbers only grow, so a number is never
  /// reused and nothing needs remembering about channels that ended.
  private var lastIncomingChannel: UInt32 = 0

  /// What an offer's endpoint hears: its channel's frames, or that the link closed.
  enum OfferSignal {
    case frame(WireFrame)
    case linkClosed(String)
  }

  /// Frames of each offer channel (both directions) go to its endpoint.
  private var offerEndpoints: [UInt32: (OfferSignal) -> Void] = [:]
  private var windows: [UInt32: Int] = [:]

  /// What the link may hold for the peer. Set by the session that adopts the link.
  var limits = SessionLimits() {
    didSet { budget.maximumQueuedReplies = limits.maximumQueuedReplies }
  }
  /// A data message arrived; nil when the session does not accept messages (they are dropped and
  /// their credit returned at once).
  var onMessage: (([UInt8]) -> Void)?
  /// The peer offered files on a channel; returns the endpoint for its frames, or nil to refuse.
  var onOffer: ((UInt32, [OfferedFile]) -> ((OfferSignal) -> Void)?)?
  /// A stream was opened by the peer; returns the buffer its chunks go to, or nil to refuse it.
  var onStream: ((UInt32, String) -> CreditedBuffer<[UInt8]>?)?
  /// The link must close because the peer broke the protocol or a limit; the reason goes in
  /// the GOODBYE. Set by ``ConnectionPipeline`` to the connection handler.
  var onViolation: ((String) -> Void)?

  /// - Parameter isInviter: The inviter opens odd channel numbers, the advertiser even ones, so
  ///   that both can open channels without colliding.
  init(isInviter: Bool, budget: LinkBudget) {
    ownParity = isInviter ? 1 : 0
    nextStreamID = isInviter ? 1 : 2
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
      guard waiters[0, default: []].isEmpty, sendCredit[0, default: 0] >= bytes.count,
        context.channel.isWritable
      else { return context.eventLoop.makeSucceededFuture(false) }
    }
    return enqueue(frame, size: bytes.count, channel: 0, context: context).map { true }
  }

  /// Opens a stream; returns its channel number.
  func openStream(named name: String) -> EventLoopFuture<UInt32> {
    guard let context else { return failedWithoutContext() }
    if let ended { return failed(ended, context) }
    let id = nextStreamID
    nextStreamID &+= 2
    sendCredit[id] = TransferMessage.initialWindow(channel: id)
    outgoingStreams[id] = .some(nil)
    write(TransferMessage.streamOpen(channel: id, name: name).frame, context: context)
    return context.eventLoop.makeSucceededFuture(id)
  }

  /// Sends stream bytes once the peer has credit for them; completes when handed to the channel.
  func sendStreamData(_ bytes: ByteBuffer, channel id: UInt32) -> EventLoopFuture<Void> {
    guard let context else { return failedWithoutContext() }
    if let problem = streamProblem(id) { return failed(problem, context) }
    return enqueue(
      WireFrame(type: .streamData, channel: id, payload: bytes), size: bytes.readableBytes,
      channel: id, context: context)
  }

  /// Ends a stream cleanly; completes when STREAM_END is written (after all its data).
  func endStream(channel id: UInt32) -> EventLoopFuture<Void> {
    guard let context else { return failedWithoutContext() }
    if let problem = streamProblem(id) { return failed(problem, context) }
    let done = enqueue(
      WireFrame(type: .streamEnd, channel: id, payload: ByteBuffer()), size: 0, channel: id,
      context: context)
    outgoingStreams[id] = .some(.streamClosed)
    return done
  }

  /// Abandons an outgoing or incoming channel, telling the peer.
  func reset(
    channel id: UInt32, _ code: TransferMessage.ResetCode, reason: String, error: TransferError
  ) {
    guard context != nil, ended == nil else { return }
    if outgoingStreams[id] != nil {
      outgoingStreams[id] = .some(error)
      failWaiters(channel: id, error)
    }
    if let buffer = incomingStreams.removeValue(forKey: id) {
      // Nobody will read what it still holds.
      unreadBytes -= buffer.discardBuffered().reduce(0) { $0 + $1.count }
      buffer.finish(.failure(error))
    }
    reply([TransferMessage.reset(channel: id, code, reason: reason).frame])
  }

  /// Offers files on a new channel whose answers go to `endpoint`; returns the channel.
  func openOffer(_ files: [OfferedFile], endpoint: @escaping (OfferSignal) -> Void)
    -> EventLoopFuture<UInt32>
  {
    guard let context else { return failedWithoutContext() }
    if let ended { return failed(ended, context) }
    let id = nextStreamID
    nextStreamID &+= 2
    sendCredit[id] = ResourceMessage.initialWindow
    outgoingStreams[id] = .some(nil)
    offerEndpoints[id] = endpoint
    write(ResourceMessage.offer(channel: id, files: files).frame, context: context)
    return context.eventLoop.makeSucceededFuture(id)
  }

  /// Queues resource frames on an offer channel, in order, and flushes once; the future is the
  /// last one's. CHUNK frames wait for credit (their whole payload counts); the others only keep
  /// their place in the channel's order.
  func sendResourceFrames(_ frames: [WireFrame], channel id: UInt32) -> EventLoopFuture<Void> {
    guard let context else { return failedWithoutContext() }
    if let problem = streamProblem(id) { return failed(problem, context) }
    var last = context.eventLoop.makeSucceededVoidFuture()
    for frame in frames {
      let size = frame.type == .chunk ? frame.payload.readableBytes : 0
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

  /// Forgets an offer channel (it completed or was reset).
  func closeOffer(channel id: UInt32) {
    offerEndpoints[id] = nil
    outgoingStreams[id] = nil
    allowance[id] = nil
    pendingGrant[id] = nil
    windows[id] = nil
    incomingOfferFiles[id] = nil
    failWaiters(channel: id, .streamClosed)
  }

  /// The application took `bytes` of what arrived on an incoming channel (a message on 0, or a
  /// stream's chunk): they no longer count as unread, and the peer gets that much credit back.
  func consumed(_ bytes: Int, channel id: UInt32) {
    unreadBytes -= bytes
    grant(bytes, channel: id)
  }

  /// Grants the peer `bytes` more on an incoming channel (batched into CREDIT frames).
  func grant(_ bytes: Int, channel id: UInt32) {
    guard context != nil, ended == nil, bytes > 0 else { return }
    guard id == 0 || allowance[id] != nil else { return }  // closed meanwhile
    let total = pendingGrant[id, default: 0] + bytes
    if total >= (windows[id] ?? TransferMessage.initialWindow(channel: id)) / 4 {
      pendingGrant[id] = 0
      allowance[id, default: 0] += total
      reply([TransferMessage.credit(channel: id, bytes: UInt32(clamping: total)).frame])
    } else {
      pendingGrant[id] = total
    }
  }

  private func streamProblem(_ id: UInt32) -> TransferError? {
    if let ended { return ended }
    guard let state = outgoingStreams[id] else { return .streamClosed }
    return state
  }

  private func enqueue(
    _ frame: WireFrame, size: Int, channel id: UInt32, context: ChannelHandlerContext,
    drainNow: Bool = true
  ) -> EventLoopFuture<Void> {
    let promise = context.eventLoop.makePromise(of: Void.self)
    waiters[id, default: []].append(Waiter(frame: frame, size: size, promise: promise))
    if drainNow { drain(channel: id) }
    return promise.futureResult
  }

  /// Writes the channel's waiting frames, in order, while its credit allows and the connection
  /// is writable.
  private func drain(channel id: UInt32) {
    guard let context, var queue = waiters[id], !queue.isEmpty, context.channel.isWritable else {
      return
    }
    var credit = sendCredit[id, default: 0]
    var written = 0
    while written < queue.count, queue[written].size <= credit {
      let waiter = queue[written]
      credit -= waiter.size
      context.write(wrapOutboundOut(waiter.frame), promise: nil)
      waiter.promise.succeed()
      written += 1
    }
    guard written > 0 else { return }
    queue.removeFirst(written)
    waiters[id] = queue.isEmpty ? nil : queue
    sendCredit[id] = credit
    context.flush()
  }

  /// Drains every channel with waiting frames, data messages first.
  private func drainAll() {
    if waiters[0] != nil { drain(channel: 0) }
    for id in waiters.keys.sorted() where id != 0 {
      guard context?.channel.isWritable == true else { return }
      drain(channel: id)
    }
  }

  private func failWaiters(channel id: UInt32, _ error: TransferError) {
    for waiter in waiters.removeValue(forKey: id) ?? [] {
      waiter.promise.fail(error)
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

  /// Before the handler is added (never in practice): there is no loop to report on but one of
  /// the global group.
  private func failedWithoutContext<T>() -> EventLoopFuture<T> {
    MultiThreadedEventLoopGroup.singleton.any().makeFailedFuture(
      TransferError.peerDisconnected(reason: "no connection"))
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
    switch frame.type {
    case .message:
      guard consumeAllowance(frame.payload.readableBytes, channel: 0) else {
        return violation("data messages beyond the granted credit")
      }
      guard let onMessage else {
        // Not accepted here: dropped, and the peer may send again.
        return grant(frame.payload.readableBytes, channel: 0)
      }
      guard receiveUnread(frame.payload.readableBytes) else { return }
      onMessage(Array(frame.payload.readableBytesView))
    case .streamData:
      guard let buffer = incomingStreams[id] else {
        // Data racing our own RESET of this stream is dropped; anything else is an error.
        return id % 2 != ownParity ? () : violation("data on an unknown stream")
      }
      guard consumeAllowance(frame.payload.readableBytes, channel: id) else {
        return violation("stream data beyond the granted credit")
      }
      guard receiveUnread(frame.payload.readableBytes) else { return }
      buffer.push(Array(frame.payload.readableBytesView))
    case .chunk:
      guard let endpoint = offerEndpoints[id] else {
        return id % 2 != ownParity ? () : violation("data for an unknown offer")
      }
      guard consumeAllowance(frame.payload.readableBytes, channel: id) else {
        return violation("file data beyond the granted credit")
      }
      endpoint(.frame(frame))
    case .offer:
      receiveOffer(frame, channel: id, context: context)
    case .offerAccept, .fileEnd, .fileAck:
      guard let endpoint = offerEndpoints[id] else { return }  // an offer already gone
      endpoint(.frame(frame))
    case .reset where offerEndpoints[id] != nil:
      offerEndpoints[id]?(.frame(frame))
      // A sender may be waiting for credit on this channel that will now never come: its
      // frames fail (the offer already recorded the peer's reason as the cause).
      failWaiters(channel: id, .streamClosed)
    case .credit, .streamOpen, .streamEnd, .reset:
      let message: TransferMessage
      do {
        message = try TransferMessage(
          frame: Frame(
            type: frame.type, channel: id, payload: Array(frame.payload.readableBytesView)))
      } catch {
        return violation("\(error)")
      }
      handle(message)
    default:
      violation("unexpected \(frame.type) frame")
    }
  }

  private func receiveOffer(_ frame: WireFrame, channel id: UInt32, context: ChannelHandlerContext)
  {
    let files: [OfferedFile]
    do {
      guard case .offer(_, let decoded) = try ResourceMessage(frame: frame.flat) else { return }
      files = decoded
    } catch {
      return violation("\(error)")
    }
    guard opensChannel(id, "offer") else { return }
    guard incomingOfferFiles.count < limits.maximumIncomingOffers else {
      return exceeded("more than \(limits.maximumIncomingOffers) offers open at once")
    }
    let inFlight = incomingOfferFiles.values.reduce(0, +)
    guard inFlight + files.count <= limits.maximumFilesInFlight else {
      return exceeded("more than \(limits.maximumFilesInFlight) files in open offers")
    }
    allowance[id] = ResourceMessage.initialWindow
    windows[id] = ResourceMessage.initialWindow
    if let endpoint = onOffer?(id, files) {
      offerEndpoints[id] = endpoint
      incomingOfferFiles[id] = files.count
    } else {
      allowance[id] = nil
      windows[id] = nil
      reply([
        TransferMessage.reset(channel: id, .refused, reason: "this peer does not accept files")
          .frame
      ])
    }
  }

  private func handle(_ message: TransferMessage) {
    switch message {
    case .credit(let id, let bytes):
      guard id == 0 || outgoingStreams[id] != nil else { return }  // a stream already gone
      let credit = sendCredit[id, default: 0] + Int(bytes)
      guard credit <= Self.maximumCredit else {
        return violation("credit beyond any window on channel \(id)")
      }
      sendCredit[id] = credit
      drain(channel: id)
    case .streamOpen(let id, let name):
      guard opensChannel(id, "stream") else { return }
      guard incomingStreams.count < limits.maximumIncomingStreams else {
        return exceeded("more than \(limits.maximumIncomingStreams) streams open at once")
      }
      guard let buffer = onStream?(id, name) else {
        return reply([
          TransferMessage.reset(channel: id, .refused, reason: "this peer does not accept streams")
            .frame
        ])
      }
      allowance[id] = TransferMessage.initialWindow(channel: id)
      incomingStreams[id] = buffer
    case .streamEnd(let id):
      guard let buffer = incomingStreams.removeValue(forKey: id) else {
        return id % 2 != ownParity ? () : violation("end of an unknown stream")
      }
      allowance[id] = nil
      buffer.finish()
    case .reset(let id, _, let reason):
      if let buffer = incomingStreams.removeValue(forKey: id) {
        allowance[id] = nil
        buffer.finish(.failure(.cancelledByPeer(reason: reason)))
      } else if outgoingStreams[id] != nil {
        outgoingStreams[id] = .some(.cancelledByPeer(reason: reason))
        failWaiters(channel: id, .cancelledByPeer(reason: reason))
      }
    case .message, .streamData:
      break  // handled on the fast path
    }
  }

  /// Counts `bytes` more as received and unread; false (and the link closing) beyond the limit.
  private func receiveUnread(_ bytes: Int) -> Bool {
    unreadBytes += bytes
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

  private func consumeAllowance(_ size: Int, channel id: UInt32) -> Bool {
    guard let available = allowance[id], available >= size else { return false }
    allowance[id] = available - size
    return true
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
    let error = TransferError.peerDisconnected(reason: reason)
    ended = error
    for id in Array(waiters.keys) { failWaiters(channel: id, error) }
    for buffer in incomingStreams.values { buffer.finish(.failure(error)) }
    incomingStreams = [:]
    let endpoints = offerEndpoints
    offerEndpoints = [:]
    for endpoint in endpoints.values {
      endpoint(.linkClosed(reason))
    }
    onOffer = nil
    onMessage = nil
    onStream = nil
    onViolation = nil
    context.fireChannelInactive()
  }
}
