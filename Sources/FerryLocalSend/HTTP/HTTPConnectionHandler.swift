import NIOCore
import NIOHTTP1

/// One HTTP connection of a server: NIO's events turned into ``HTTPRequestStateMachine``'s,
/// and its actions performed — reads, writes, the one timer, closing — with the server's
/// ``HTTPEndpoints`` doing the requests' work. Idle connections are found by NIO's
/// `IdleStateHandler` before it in the pipeline. On the channel's event loop.
final class HTTPConnectionHandler<Endpoints: HTTPEndpoints>: ChannelDuplexHandler,
  @unchecked Sendable
{
  typealias InboundIn = HTTPServerRequestPart
  typealias OutboundIn = HTTPServerResponsePart
  typealias OutboundOut = HTTPServerResponsePart
  typealias Machine = HTTPRequestStateMachine<Endpoints.Work>

  private let endpoints: Endpoints
  private let address: String
  private let slot: Int
  /// Bytes a gathered body may take from the server's budget (nil: no budget).
  private let budget: ByteBudget?
  private var machine: Machine
  private var context: ChannelHandlerContext?
  private var timer: Scheduled<Void>?
  private var actions: [Machine.Action] = []

  /// A connection from `address`, in `slot` of the server's, whose requests `endpoints` do;
  /// gathered bodies draw on `budget`.
  init(
    endpoints: Endpoints, address: String, slot: Int, budget: ByteBudget?,
    limits: Machine.Limits = Machine.Limits()
  ) {
    self.endpoints = endpoints
    self.address = address
    self.slot = slot
    self.budget = budget
    machine = Machine(limits: limits, now: .now)
  }

  // MARK: Channel events

  func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
    perform(machine.opened)
  }

  func handlerRemoved(context: ChannelHandlerContext) {
    timer?.cancel()
    machine.closed(into: &actions)
    perform()
    self.context = nil
  }

  func channelInactive(context: ChannelHandlerContext) {
    machine.closed(into: &actions)
    perform()
    context.fireChannelInactive()
  }

  func read(context: ChannelHandlerContext) {
    machine.readRequested(into: &actions)
    perform()
  }

  func channelWritabilityChanged(context: ChannelHandlerContext) {
    machine.writabilityChanged(context.channel.isWritable, into: &actions)
    perform()
    context.fireChannelWritabilityChanged()
  }

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .all {
      machine.idleTimeout(into: &actions)
      perform()
      return
    }
    context.fireUserInboundEventTriggered(event)
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    switch unwrapInboundIn(data) {
    case .head(let head):
      let number = machine.nextRequest
      let decision = endpoints.decide(
        head, request(number, context: context), reply: reply(number, context))
      // A body is announced by its length (more than none) or by chunks.
      let length = head.headers.first(name: "content-length").flatMap { Int($0) }
      let hasBody =
        length.map { $0 > 0 } ?? head.headers.contains(name: "transfer-encoding")
      machine.head(decision, hasBody: hasBody, now: .now, into: &actions)
    case .body(let piece):
      machine.body(piece, now: .now, take: { self.budget?.take($0) ?? true }, into: &actions)
    case .end:
      machine.end(into: &actions)
    }
    perform()
  }

  // MARK: Actions

  private func perform(_ more: [Machine.Action] = []) {
    actions += more
    while !actions.isEmpty {
      let action = actions.removeFirst()
      guard let context else { continue }
      perform(action, context: context)
    }
  }

  private func perform(_ action: Machine.Action, context: ChannelHandlerContext) {
    switch action {
    case .read:
      context.read()
    case .close:
      context.close(promise: nil)
    case .schedule(let at):
      timer?.cancel()
      timer = at.map { at in
        context.eventLoop.scheduleTask(in: TimeAmount(max(.zero, at - .now))) { [weak self] in
          guard let self else { return }
          self.machine.timerFired(now: .now, into: &self.actions)
          self.perform()
        }
      }
    case .busy(let busy):
      endpoints.connection(slot, busy: busy)
    case .requestStarted:
      endpoints.requestStarted()
    case .requestAnswered:
      endpoints.requestAnswered()
    case .write(let answer, let closing, let settles):
      write(answer, closing: closing, settles: settles, context: context)
    case .giveBack(let count):
      budget?.give(count)
    case .deliver(let number, let work, let body):
      if let waiting = endpoints.deliver(
        work, body: body, request(number, context: context), reply: reply(number, context))
      {
        machine.waiting(number, on: waiting)
      }
    case .feed(let number, let work, let piece, let cost):
      // A small piece is copied, so that it does not keep the whole read buffer alive.
      let piece =
        piece.readableBytes < 4096 ? context.channel.allocator.buffer(buffer: piece) : piece
      let loop = context.eventLoop
      let handler = NIOLoopBound(self, eventLoop: loop)
      let mayRead = endpoints.feed(
        work, piece: piece, cost: cost, request(number, context: context)
      ) {
        loop.execute {
          let this = handler.value
          this.machine.endpointCaughtUp(number, into: &this.actions)
          this.perform()
        }
      }
      machine.fed(number, mayRead: mayRead)
    case .bodyEnded(let number, let work):
      if let waiting = endpoints.bodyEnded(
        work, request(number, context: context), reply: reply(number, context))
      {
        machine.waiting(number, on: waiting)
      }
    case .overlong(let work):
      endpoints.overlong(work)
    case .abandoned(let work):
      endpoints.abandoned(work, request(0, context: context))
    }
  }

  /// Writes one whole answer; closes after it when `closing` (forced 5 s later, for a peer
  /// that reads nothing, which keeps it from being flushed).
  private func write(
    _ answer: HTTPAnswer, closing: Bool, settles: Bool, context: ChannelHandlerContext
  ) {
    let done = HTTPServing.answer(
      answer.status, body: answer.body, type: answer.type,
      extra: endpoints.extraHeaders + answer.headers,
      closing: closing, context: context)
    if settles { done.whenComplete { [endpoints] _ in endpoints.requestAnswered() } }
    guard closing else { return }
    // A lingering close, as web servers do: once the answer is out, this side's output is
    // closed, and what the peer still sends (a refused body) is read and dropped until it
    // closes too — closing at once with its bytes unread would reset the connection, and
    // the peer would lose the answer ("connection reset" instead of 413). Five seconds at
    // most, for a peer that keeps sending or reads nothing; a channel that cannot close only
    // its output (TLS) is closed whole.
    let channel = context.channel
    done.whenComplete { _ in
      channel.close(mode: .output).whenFailure { _ in channel.close(promise: nil) }
    }
    channel.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
  }

  /// Request `number` as the endpoints see it.
  private func request(_ number: Int, context: ChannelHandlerContext) -> HTTPRequest {
    HTTPRequest(number: number, address: address, slot: slot, channel: context.channel)
  }

  /// How request `number` is answered later, from any thread.
  private func reply(_ number: Int, _ context: ChannelHandlerContext) -> HTTPReply {
    let loop = context.eventLoop
    let handler = NIOLoopBound(self, eventLoop: loop)
    return HTTPReply(
      answer: { answer in
        loop.execute {
          let this = handler.value
          this.machine.answer(answer, request: number, now: .now, into: &this.actions)
          this.perform()
        }
      },
      respondWith: { write in
        loop.execute {
          let this = handler.value
          guard let channel = this.context?.channel else { return }
          this.machine.responding(number)
          guard case .responding(number) = this.machine.state else { return }
          write(channel) { closing in
            loop.execute {
              let this = handler.value
              this.machine.responseEnded(number, closing: closing, now: .now, into: &this.actions)
              this.perform()
            }
          }
        }
      })
  }
}

/// How an endpoint answers a request later, from any thread: one whole answer, or (a
/// download) one it writes itself.
package struct HTTPReply: Sendable {
  fileprivate let answer: @Sendable (HTTPAnswer) -> Void
  fileprivate let respondWith:
    @Sendable (
      @escaping @Sendable (any Channel, @escaping @Sendable (_ closing: Bool) -> Void) -> Void
    ) -> Void

  /// Answers the request (a late or second answer is dropped).
  package func callAsFunction(_ answer: HTTPAnswer) { self.answer(answer) }

  /// Writes the answer itself: `write` is called on the event loop with the connection's
  /// channel, writes the whole answer (its head, body and end, as `HTTPServerResponsePart`s),
  /// and calls its second argument once it is written (`closing`: it was cut short, and the
  /// connection closes).
  package func respond(
    _ write: @escaping @Sendable (any Channel, @escaping @Sendable (Bool) -> Void) -> Void
  ) {
    respondWith(write)
  }
}
