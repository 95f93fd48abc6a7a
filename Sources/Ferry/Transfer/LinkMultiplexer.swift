import NIOCore

/// Carries a connected link's session traffic — data messages and streams — with per-channel
/// credit-based flow control (docs/PROTOCOL.md, "Flow control").
///
/// Sending: a frame on a channel waits until the peer has granted credit for its payload, so a
/// slow receiver slows only the channel it is slow on, and the memory any channel can hold is
/// bounded by its window. Receiving: the peer may not exceed the credit granted; credit is
/// granted back as the application consumes. Violations close the connection.
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

  private var context: ChannelHandlerContext?
  private var nextStreamID: UInt32
  private let ownParity: UInt32
  private var sendCredit: [UInt32: Int] = [0: TransferMessage.initialWindow(channel: 0)]
  private var waiters: [UInt32: [Waiter]] = [:]
  private var outgoingStreams: [UInt32: TransferError?] = [:]
  private var allowance: [UInt32: Int] = [0: TransferMessage.initialWindow(channel: 0)]
  private var pendingGrant: [UInt32: Int] = [:]
  private var incomingStreams: [UInt32: CreditedBuffer<[UInt8]>] = [:]
  private var ended: TransferError?

  /// What an offer's endpoint hears: its channel's frames, or that the link closed.
  enum OfferSignal {
    case frame(WireFrame)
    case linkClosed(String)
  }

  /// Frames of each offer channel (both directions) go to its endpoint.
  private var offerEndpoints: [UInt32: (OfferSignal) -> Void] = [:]
  private var windows: [UInt32: Int] = [:]

  /// A data message arrived.
  var onMessage: (([UInt8]) -> Void)?
  /// The peer offered files on a channel; returns the endpoint for its frames, or nil to refuse.
  var onOffer: ((UInt32, [OfferedFile]) -> ((OfferSignal) -> Void)?)?
  /// A stream was opened by the peer; returns the buffer its chunks go to.
  var onStream: ((UInt32, String) -> CreditedBuffer<[UInt8]>)?

  /// - Parameter isInviter: The inviter opens odd channel numbers, the advertiser even ones, so
  ///   that both can open channels without colliding.
  init(isInviter: Bool) {
    ownParity = isInviter ? 1 : 0
    nextStreamID = isInviter ? 1 : 2
  }

  func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
  }

  // MARK: Sending (event loop only)

  /// Sends a data message. Reliable: waits for credit. Unreliable: sent only if credit is
  /// available and the socket is writable now, else dropped (the future gives false).
  func sendMessage(_ bytes: [UInt8], reliable: Bool) -> EventLoopFuture<Bool> {
    guard let context else { return failed(.peerDisconnected(reason: "no connection")) }
    if let ended { return failed(ended) }
    let frame = WireFrame(
      type: .message, channel: 0, payload: context.channel.allocator.buffer(bytes: bytes))
    if !reliable {
      guard waiters[0, default: []].isEmpty, sendCredit[0, default: 0] >= bytes.count,
        context.channel.isWritable
      else { return context.eventLoop.makeSucceededFuture(false) }
    }
    return enqueue(frame, size: bytes.count, channel: 0).map { true }
  }

  /// Opens a stream; returns its channel number.
  func openStream(named name: String) -> EventLoopFuture<UInt32> {
    guard let context else { return failed(.peerDisconnected(reason: "no connection")) }
    if let ended { return failed(ended) }
    let id = nextStreamID
    nextStreamID &+= 2
    sendCredit[id] = TransferMessage.initialWindow(channel: id)
    outgoingStreams[id] = .some(nil)
    write(TransferMessage.streamOpen(channel: id, name: name).frame, context: context)
    return context.eventLoop.makeSucceededFuture(id)
  }

  /// Sends stream bytes once the peer has credit for them; completes when handed to the channel.
  func sendStreamData(_ bytes: ByteBuffer, channel id: UInt32) -> EventLoopFuture<Void> {
    if let problem = streamProblem(id) { return failed(problem) }
    return enqueue(
      WireFrame(type: .streamData, channel: id, payload: bytes), size: bytes.readableBytes,
      channel: id)
  }

  /// Ends a stream cleanly; completes when STREAM_END is written (after all its data).
  func endStream(channel id: UInt32) -> EventLoopFuture<Void> {
    if let problem = streamProblem(id) { return failed(problem) }
    let done = enqueue(
      WireFrame(type: .streamEnd, channel: id, payload: ByteBuffer()), size: 0, channel: id)
    outgoingStreams[id] = .some(.streamClosed)
    return done
  }

  /// Abandons an outgoing or incoming channel, telling the peer.
  func reset(
    channel id: UInt32, _ code: TransferMessage.ResetCode, reason: String, error: TransferError
  ) {
    guard let context, ended == nil else { return }
    if outgoingStreams[id] != nil {
      outgoingStreams[id] = .some(error)
      failWaiters(channel: id, error)
    }
    if let buffer = incomingStreams.removeValue(forKey: id) {
      buffer.finish(.failure(error))
    }
    write(TransferMessage.reset(channel: id, code, reason: reason).frame, context: context)
  }

  /// Offers files on a new channel whose answers go to `endpoint`; returns the channel.
  func openOffer(_ files: [OfferedFile], endpoint: @escaping (OfferSignal) -> Void)
    -> EventLoopFuture<UInt32>
  {
    guard let context else { return failed(.peerDisconnected(reason: "no connection")) }
    if let ended { return failed(ended) }
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
    if let problem = streamProblem(id) { return failed(problem) }
    var last = context!.eventLoop.makeSucceededVoidFuture()
    for frame in frames {
      let size = frame.type == .chunk ? frame.payload.readableBytes : 0
      last = enqueue(frame, size: size, channel: id, drainNow: false)
    }
    drain(channel: id)  // one flush for the batch
    return last
  }

  /// Sends frames on an incoming offer's channel (OFFER_ACCEPT, FILE_ACK), flushed once.
  func answerOffer(_ frames: [Frame]) {
    guard let context, ended == nil else { return }
    for frame in frames {
      context.write(
        wrapOutboundOut(WireFrame(frame, allocator: context.channel.allocator)), promise: nil)
    }
    context.flush()
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
    failWaiters(channel: id, .streamClosed)
  }

  /// Grants the peer `bytes` more on an incoming channel (batched into CREDIT frames).
  func grant(_ bytes: Int, channel id: UInt32) {
    guard let context, ended == nil, bytes > 0 else { return }
    guard id == 0 || allowance[id] != nil else { return }  // closed meanwhile
    let total = pendingGrant[id, default: 0] + bytes
    if total >= (windows[id] ?? TransferMessage.initialWindow(channel: id)) / 4 {
      pendingGrant[id] = 0
      allowance[id, default: 0] += total
      write(TransferMessage.credit(channel: id, bytes: UInt32(total)).frame, context: context)
    } else {
      pendingGrant[id] = total
    }
  }

  private func streamProblem(_ id: UInt32) -> TransferError? {
    if let ended { return ended }
    guard let state = outgoingStreams[id] else { return .streamClosed }
    return state
  }

  private func enqueue(_ frame: WireFrame, size: Int, channel id: UInt32, drainNow: Bool = true)
    -> EventLoopFuture<Void>
  {
    let promise = context!.eventLoop.makePromise(of: Void.self)
    waiters[id, default: []].append(Waiter(frame: frame, size: size, promise: promise))
    if drainNow { drain(channel: id) }
    return promise.futureResult
  }

  /// Writes the channel's waiting frames, in order, while its credit allows.
  private func drain(channel id: UInt32) {
    guard let context, var queue = waiters[id], !queue.isEmpty else { return }
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

  private func failWaiters(channel id: UInt32, _ error: TransferError) {
    for waiter in waiters.removeValue(forKey: id) ?? [] {
      waiter.promise.fail(error)
    }
  }

  private func write(_ frame: Frame, context: ChannelHandlerContext) {
    context.writeAndFlush(
      wrapOutboundOut(WireFrame(frame, allocator: context.channel.allocator)), promise: nil)
  }

  private func failed<T>(_ error: TransferError) -> EventLoopFuture<T> {
    context!.eventLoop.makeFailedFuture(error)
  }

  // MARK: Receiving

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    let frame = unwrapInboundIn(data)
    let id = frame.channel
    switch frame.type {
    case .message:
      guard consumeAllowance(frame.payload.readableBytes, channel: 0) else {
        return violation("data messages beyond the granted credit", context: context)
      }
      onMessage?(Array(frame.payload.readableBytesView))
    case .streamData:
      guard let buffer = incomingStreams[id] else {
        // Data racing our own RESET of this stream is dropped; anything else is an error.
        return id % 2 != ownParity ? () : violation("data on an unknown stream", context: context)
      }
      guard consumeAllowance(frame.payload.readableBytes, channel: id) else {
        return violation("stream data beyond the granted credit", context: context)
      }
      buffer.push(Array(frame.payload.readableBytesView))
    case .chunk:
      guard let endpoint = offerEndpoints[id] else {
        return id % 2 != ownParity ? () : violation("data for an unknown offer", context: context)
      }
      guard consumeAllowance(frame.payload.readableBytes, channel: id) else {
        return violation("file data beyond the granted credit", context: context)
      }
      endpoint(.frame(frame))
    case .offer:
      let files: [OfferedFile]
      do {
        guard case .offer(_, let decoded) = try ResourceMessage(frame: frame.flat) else { return }
        files = decoded
      } catch {
        return violation("\(error)", context: context)
      }
      guard id % 2 != ownParity, allowance[id] == nil, offerEndpoints[id] == nil else {
        return violation("invalid offer channel \(id)", context: context)
      }
      allowance[id] = ResourceMessage.initialWindow
      windows[id] = ResourceMessage.initialWindow
      if let endpoint = onOffer?(id, files) {
        offerEndpoints[id] = endpoint
      } else {
        allowance[id] = nil
        windows[id] = nil
        write(
          TransferMessage.reset(channel: id, .refused, reason: "this peer does not accept files")
            .frame,
          context: context)
      }
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
        return violation("\(error)", context: context)
      }
      handle(message, context: context)
    default:
      violation("unexpected \(frame.type) frame", context: context)
    }
  }

  private func handle(_ message: TransferMessage, context: ChannelHandlerContext) {
    switch message {
    case .credit(let id, let bytes):
      guard id == 0 || outgoingStreams[id] != nil else { return }  // a stream already gone
      sendCredit[id, default: 0] += Int(bytes)
      drain(channel: id)
    case .streamOpen(let id, let name):
      guard id % 2 != ownParity, incomingStreams[id] == nil, allowance[id] == nil,
        let onStream
      else { return violation("invalid stream channel \(id)", context: context) }
      allowance[id] = TransferMessage.initialWindow(channel: id)
      incomingStreams[id] = onStream(id, name)
    case .streamEnd(let id):
      guard let buffer = incomingStreams.removeValue(forKey: id) else {
        return id % 2 != ownParity ? () : violation("end of an unknown stream", context: context)
      }
      buffer.finish()
    case .reset(let id, _, let reason):
      if let buffer = incomingStreams.removeValue(forKey: id) {
        buffer.finish(.failure(.cancelledByPeer(reason: reason)))
      } else if outgoingStreams[id] != nil {
        outgoingStreams[id] = .some(.cancelledByPeer(reason: reason))
        failWaiters(channel: id, .cancelledByPeer(reason: reason))
      }
    case .message, .streamData:
      break  // handled on the fast path
    }
  }

  private func consumeAllowance(_ size: Int, channel id: UInt32) -> Bool {
    guard let available = allowance[id], available >= size else { return false }
    allowance[id] = available - size
    return true
  }

  private func violation(_ reason: String, context: ChannelHandlerContext) {
    write(ControlMessage.goodbye(.protocolError, reason: reason).frame, context: context)
    context.close(promise: nil)
  }

  func channelInactive(context: ChannelHandlerContext) {
    let error = TransferError.peerDisconnected(reason: "the connection closed")
    ended = error
    for id in Array(waiters.keys) { failWaiters(channel: id, error) }
    for buffer in incomingStreams.values { buffer.finish(.failure(error)) }
    incomingStreams = [:]
    let endpoints = offerEndpoints
    offerEndpoints = [:]
    for endpoint in endpoints.values {
      endpoint(.linkClosed("the connection closed"))
    }
    onOffer = nil
    onMessage = nil
    onStream = nil
    context.fireChannelInactive()
  }
}
