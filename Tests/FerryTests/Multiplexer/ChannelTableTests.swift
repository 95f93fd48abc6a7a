import FerryWire
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import Ferry

/// The multiplexer's channel table, its flows, and how each kind of channel ends.
@Suite("Multiplexer: channel table")
struct ChannelTableTests {
  let loop = EmbeddedEventLoop()

  func waiter(_ size: Int, channel: UInt32 = 1) -> OutboundFlow.Waiter {
    OutboundFlow.Waiter(
      frame: WireFrame(type: .streamData, channel: channel, payload: ByteBuffer()), size: size,
      promise: loop.makePromise())
  }

  /// The error a future failed with, or nil if it succeeded or is still pending.
  func failure(_ future: EventLoopFuture<Void>) -> TransferError? {
    let error = Mutex<TransferError?>(nil)
    future.whenFailure { failure in error.withLock { $0 = failure as? TransferError } }
    loop.run()
    return error.withLock { $0 }
  }

  func succeeded(_ future: EventLoopFuture<Void>) -> Bool {
    let done = Mutex(false)
    future.whenSuccess { done.withLock { $0 = true } }
    loop.run()
    return done.withLock { $0 }
  }

  @Test("frames leave in order, each when the credit covers it, never ahead of one waiting")
  func outboundOrder() {
    let flow = OutboundFlow(credit: 10)
    let (first, second, third) = (waiter(6), waiter(6), waiter(0))
    for item in [first, second, third] { flow.enqueue(item) }
    var written: [Int] = []
    #expect(flow.drain { _ in written.append(written.count) } == 1)
    #expect(flow.credit == 4 && flow.hasWaiters)
    // The empty frame behind the waiting one keeps its place.
    #expect(!succeeded(third.promise.futureResult))
    #expect(!flow.canSendNow(1), "a message may not overtake waiting frames")
    #expect(flow.addCredit(2, maximum: 100))
    #expect(flow.drain { _ in } == 2)
    #expect(succeeded(second.promise.futureResult) && succeeded(third.promise.futureResult))
    #expect(flow.credit == 0 && !flow.hasWaiters)
  }

  @Test("credit beyond the maximum is refused whole, and sums cannot overflow")
  func creditCap() {
    let flow = OutboundFlow(credit: 5)
    #expect(!flow.addCredit(Int(UInt32.max), maximum: 1 << 30) || flow.credit <= 1 << 30)
    #expect(flow.addCredit((1 << 30) - 5, maximum: 1 << 30))
    #expect(!flow.addCredit(1, maximum: 1 << 30))
    #expect(flow.credit == 1 << 30)
  }

  @Test("the peer may send its window and no more; credit goes back a quarter window at a time")
  func inbound() {
    let flow = InboundFlow(window: 100)
    #expect(flow.consume(60) && flow.consume(40))
    #expect(!flow.consume(1))
    #expect(flow.grant(10) == nil)
    #expect(flow.grant(15) == 25)
    #expect(flow.allowance == 25)
    #expect(flow.consume(25) && !flow.consume(1))
  }

  @Test("channel 0 is always there and cannot be taken; numbers are never shared")
  func numbers() {
    var table = ChannelTable(messageWindow: 64)
    #expect(table[0]?.outbound != nil && table[0]?.inbound != nil)
    let zero = table.open(0, .outgoingStream(OutboundFlow(credit: 1)))
    let removedZero = table.remove(0)
    let three = table.open(3, .outgoingStream(OutboundFlow(credit: 1)))
    let threeAgain = table.open(3, .outgoingStream(OutboundFlow(credit: 1)))
    #expect(!zero && removedZero == nil && table[0] != nil)
    #expect(three && !threeAgain)
  }

  @Test("what the peer holds open is counted, and uncounted as it goes")
  func counts() {
    var table = ChannelTable(messageWindow: 64)
    let buffer = CreditedBuffer<[UInt8]> { _ in }
    let opened = [
      table.open(2, .incomingStream(InboundFlow(window: 8), buffer: buffer)),
      table.open(4, .incomingOffer(InboundFlow(window: 8), endpoint: { _ in }, files: 7)),
      table.open(6, .incomingOffer(InboundFlow(window: 8), endpoint: { _ in }, files: 5)),
      table.open(1, .outgoingOffer(OutboundFlow(credit: 8), endpoint: { _ in })),
    ]
    #expect(opened == [true, true, true, true])
    #expect(table.incomingStreams == 1 && table.incomingOffers == 2 && table.filesInFlight == 12)
    _ = table.remove(4)
    #expect(table.incomingOffers == 1 && table.filesInFlight == 5)
    let again = table.remove(4)
    #expect(again == nil, "removed once")
    let rest = table.removeAll()
    #expect(rest.count == 4)
    #expect(table.incomingStreams == 0 && table.incomingOffers == 0 && table.filesInFlight == 0)
  }

  @Test("channels with frames waiting are drained data messages first, then by number")
  func waiting() {
    var table = ChannelTable(messageWindow: 0)
    for id: UInt32 in [9, 3, 5] {
      let opened = table.open(id, .outgoingStream(OutboundFlow(credit: 0)))
      #expect(opened)
    }
    table[9]?.outbound?.enqueue(waiter(1, channel: 9))
    table[3]?.outbound?.enqueue(waiter(1, channel: 3))
    table[0]?.outbound?.enqueue(waiter(1, channel: 0))
    #expect(table.waitingChannels == [0, 3, 9])
    for channel in table.removeAll() { _ = channel.end(.linkEnded("done")) }
  }

  /// Every kind of channel ends the same way: what waits to be sent fails, a buffer finishes,
  /// an endpoint hears it, unless the offer ended the channel itself.
  @Test(
    "every kind of channel ends alike, whatever the cause",
    arguments: ["local", "reset", "finished", "link"])
  func ends(cause name: String) async throws {
    let resetFrame = WireFrame(type: .reset, channel: 1, payload: ByteBuffer())
    let cause: ChannelEnd =
      switch name {
      case "local": .local(.cancelled)
      case "reset": .reset(resetFrame, reason: "enough")
      case "finished": .finished
      default: .linkEnded("gone")
      }

    let stream = OutboundFlow(credit: 0)
    let streamWaiter = waiter(5)
    stream.enqueue(streamWaiter)
    #expect(LinkChannel.outgoingStream(stream).end(cause) == 0)
    let streamError = failure(streamWaiter.promise.futureResult)
    switch name {
    case "local": #expect(streamError == .cancelled)
    case "reset": #expect(streamError == .cancelledByPeer(reason: "enough"))
    case "finished": #expect(streamError == .streamClosed)
    default: #expect(streamError == .peerDisconnected(reason: "gone"))
    }

    let offer = OutboundFlow(credit: 0)
    let offerWaiter = waiter(5)
    offer.enqueue(offerWaiter)
    var heard: [String] = []
    let endpoint: (OfferSignal) -> Void = { signal in
      switch signal {
      case .frame(let frame): heard.append("\(frame.type)")
      case .linkClosed(let reason): heard.append(reason)
      }
    }
    _ = LinkChannel.outgoingOffer(offer, endpoint: endpoint).end(cause)
    _ = LinkChannel.incomingOffer(InboundFlow(window: 8), endpoint: endpoint, files: 1).end(cause)
    #expect(failure(offerWaiter.promise.futureResult) != nil, "a waiting CHUNK was left hanging")
    switch name {
    case "reset": #expect(heard == ["\(FrameType.reset)", "\(FrameType.reset)"])
    case "link": #expect(heard == ["gone", "gone"])
    default: #expect(heard.isEmpty, "the offer ended its channel itself: nothing to tell")
    }

    let buffer = CreditedBuffer<[UInt8]> { _ in }
    buffer.push([1, 2, 3])
    let discarded = LinkChannel.incomingStream(InboundFlow(window: 8), buffer: buffer).end(cause)
    #expect(discarded == (name == "local" ? SessionLimits.unreadCost(3) : 0))
    var received: [[UInt8]] = []
    var ending: TransferError?
    do {
      while let chunk = try await buffer.next() { received.append(chunk) }
    } catch {
      ending = error as? TransferError
    }
    #expect(received == (name == "local" ? [] : [[1, 2, 3]]))
    switch name {
    case "local": #expect(ending == .cancelled)
    case "reset": #expect(ending == .cancelledByPeer(reason: "enough"))
    case "finished": #expect(ending == nil)
    default: #expect(ending == .peerDisconnected(reason: "gone"))
    }
  }
}
