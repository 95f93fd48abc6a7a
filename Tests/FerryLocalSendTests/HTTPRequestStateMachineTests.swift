import NIOCore
import NIOHTTP1
import Testing

@testable import FerryLocalSend

/// One HTTP connection's requests as a pure value, state × event: no channel, no clock but the
/// instants given.
@Suite("HTTP request state machine")
struct HTTPRequestStateMachineTests {
  typealias Machine = HTTPRequestStateMachine<String>

  let t0 = ContinuousClock.now

  /// The actions' names, in order (what a test compares).
  static func names(_ actions: [Machine.Action]) -> [String] {
    actions.map { action in
      switch action {
      case .read: return "read"
      case .close: return "close"
      case .schedule(let at): return at == nil ? "unschedule" : "schedule"
      case .busy(let busy): return busy ? "busy" : "idle"
      case .requestStarted: return "started"
      case .write(let answer, let closing, let settles):
        return "write \(answer.status.code)\(closing ? " closing" : "")\(settles ? " settles" : "")"
      case .requestAnswered: return "answered"
      case .giveBack(let count): return "giveBack \(count)"
      case .deliver(let number, let work, let body):
        return "deliver \(number) \(work) \(String(buffer: body))"
      case .feed(let number, let work, let piece, let cost):
        return "feed \(number) \(work) \(piece.readableBytes) \(cost)"
      case .bodyEnded(let number, let work): return "ended \(number) \(work)"
      case .overlong(let work): return "overlong \(work)"
      case .abandoned(let work): return "abandoned \(work)"
      }
    }
  }

  func run(_ body: (inout [Machine.Action]) -> Void) -> [String] {
    var actions: [Machine.Action] = []
    body(&actions)
    return Self.names(actions)
  }

  static func bytes(_ count: Int) -> ByteBuffer { ByteBuffer(repeating: 0x61, count: count) }

  @Test("a connection arms the first head's deadline; a head answered at once leaves it ready")
  func answeredAtOnce() {
    var machine = Machine(now: t0)
    #expect(Self.names(machine.opened) == ["schedule"])
    let actions = run { machine.head(.answer(.text(.ok, "info")), now: t0, into: &$0) }
    #expect(actions == ["busy", "started", "unschedule", "write 200 settles", "idle", "schedule"])
    guard case .awaitingHead(let deadline) = machine.state else {
      Issue.record("not waiting for a head: \(machine.state)")
      return
    }
    #expect(deadline == t0 + .seconds(10))
    // The body of a request answered from its head is not read.
    #expect(run { machine.body(Self.bytes(10), now: t0, take: { _ in true }, into: &$0) } == [])
    #expect(run { machine.end(into: &$0) } == [])
  }

  @Test("a closing answer closes; a head after it changes nothing (the close is on its way)")
  func closingAnswer() {
    var machine = Machine(now: t0)
    let actions = run {
      machine.head(.answer(.text(.conflict, "busy", closing: true)), now: t0, into: &$0)
    }
    #expect(
      actions == ["busy", "started", "unschedule", "write 409 closing settles", "unschedule"])
    #expect(run { machine.head(.answer(.text(.ok, "")), now: t0, into: &$0) } == [])
  }

  @Test("an answer from the head to a request with a body closes: the body is never read")
  func refusedBody() {
    var machine = Machine(now: t0)
    let actions = run {
      machine.head(
        .answer(.text(.conflict, "no such session")), hasBody: true, now: t0, into: &$0)
    }
    #expect(
      actions == ["busy", "started", "unschedule", "write 409 closing settles", "unschedule"])
  }

  @Test("the request deadline: not before it, at it; a trickling body is cut at 10 s")
  func deadlines() {
    var machine = Machine(now: t0)
    #expect(run { machine.timerFired(now: t0 + .seconds(9), into: &$0) } == [])
    #expect(run { machine.timerFired(now: t0 + .seconds(10), into: &$0) } == ["close"])
    var gathering = Machine(now: t0)
    _ = run { gathering.head(.gather("json", limit: 100), now: t0 + .seconds(1), into: &$0) }
    _ = run { gathering.body(Self.bytes(1), now: t0 + .seconds(5), take: { _ in true }, into: &$0) }
    #expect(
      run { gathering.timerFired(now: t0 + .seconds(11), into: &$0) } == ["giveBack 1", "close"])
  }

  @Test("a gathered body: its bytes drawn from the budget, delivered whole at its end")
  func gathers() {
    var machine = Machine(now: t0)
    var taken = 0
    let start = run { machine.head(.gather("json", limit: 8), now: t0, into: &$0) }
    #expect(start == ["busy", "started", "schedule"])
    _ = run { actions in
      machine.body(
        ByteBuffer(string: "{\"a\":"), now: t0,
        take: {
          taken += $0
          return true
        }, into: &actions)
    }
    _ = run { actions in
      machine.body(
        ByteBuffer(string: "1}"), now: t0,
        take: {
          taken += $0
          return true
        }, into: &actions)
    }
    #expect(taken == 7)
    #expect(
      run { machine.end(into: &$0) } == ["unschedule", "giveBack 7", "deliver 1 json {\"a\":1}"])
    guard case .awaitingAnswer(1, "json") = machine.state else {
      Issue.record("not awaiting the answer: \(machine.state)")
      return
    }
    #expect(
      run { machine.answer(.json(.ok, []), request: 1, now: t0, into: &$0) }
        == ["write 200 settles", "idle", "schedule"])
  }

  @Test("a body past its limit is 413 and closes; one the budget cannot take is 503")
  func limits() {
    var machine = Machine(now: t0)
    _ = run { machine.head(.gather("json", limit: 4), now: t0, into: &$0) }
    _ = run { machine.body(Self.bytes(3), now: t0, take: { _ in true }, into: &$0) }
    #expect(
      run { machine.body(Self.bytes(2), now: t0, take: { _ in true }, into: &$0) }
        == ["giveBack 3", "write 413 closing settles", "unschedule"])
    var starved = Machine(now: t0)
    _ = run { starved.head(.gather("json", limit: 100), now: t0, into: &$0) }
    #expect(
      run { starved.body(Self.bytes(2), now: t0, take: { _ in false }, into: &$0) }
        == ["write 503 closing settles", "unschedule"])
  }

  @Test("a streamed body: fed with its cost (at least 4 KiB), never past its size, then ended")
  func streams() {
    var machine = Machine(now: t0)
    #expect(
      run { machine.head(.stream("upload", size: 10_000), now: t0, into: &$0) }
        == ["busy", "started", "unschedule"])
    #expect(
      run { machine.body(Self.bytes(100), now: t0, take: { _ in false }, into: &$0) }
        == ["feed 1 upload 100 4096"])
    #expect(
      run { machine.body(Self.bytes(9_000), now: t0, take: { _ in false }, into: &$0) }
        == ["feed 1 upload 9000 9000"])
    // The body has no deadline of its own; the endpoint's stall does.
    #expect(run { machine.timerFired(now: t0 + .seconds(60), into: &$0) } == [])
    #expect(
      run { machine.body(Self.bytes(901), now: t0, take: { _ in true }, into: &$0) }
        == ["overlong upload", "write 400 closing settles", "unschedule"])
    var ending = Machine(now: t0)
    _ = run { ending.head(.stream("upload", size: 4), now: t0, into: &$0) }
    _ = run { ending.body(Self.bytes(4), now: t0, take: { _ in true }, into: &$0) }
    #expect(run { ending.end(into: &$0) } == ["ended 1 upload"])
  }

  @Test("a paused body holds reads until its endpoint catches up; a peer not reading answers too")
  func pacing() {
    var machine = Machine(now: t0)
    _ = run { machine.head(.stream("upload", size: 1 << 30), now: t0, into: &$0) }
    _ = run { machine.body(Self.bytes(10), now: t0, take: { _ in true }, into: &$0) }
    machine.fed(1, mayRead: false)
    #expect(run { machine.readRequested(into: &$0) } == [])
    // Paused: not the connection's silence.
    #expect(run { machine.idleTimeout(into: &$0) } == [])
    #expect(run { machine.endpointCaughtUp(1, into: &$0) } == ["read"])
    #expect(run { machine.readRequested(into: &$0) } == ["read"])
    #expect(run { machine.writabilityChanged(false, into: &$0) } == [])
    #expect(run { machine.readRequested(into: &$0) } == [])
    #expect(run { machine.writabilityChanged(true, into: &$0) } == ["read"])
    // Not paused, silent: closed.
    #expect(run { machine.idleTimeout(into: &$0) } == ["close"])
  }

  @Test("waiting for the endpoint's answer is not silence; a late or second answer is dropped")
  func answers() {
    var machine = Machine(now: t0)
    _ = run { machine.head(.gather("prepare", limit: 100), now: t0, into: &$0) }
    _ = run { machine.end(into: &$0) }
    machine.waiting(1, on: "asked s1")
    #expect(run { machine.idleTimeout(into: &$0) } == [])
    #expect(run { machine.answer(.text(.ok, ""), request: 2, now: t0, into: &$0) } == [])
    #expect(
      run { machine.answer(.text(.ok, ""), request: 1, now: t0, into: &$0) }
        == ["write 200 settles", "idle", "schedule"])
    #expect(run { machine.answer(.text(.ok, ""), request: 1, now: t0, into: &$0) } == [])
  }

  @Test("an answer before its body ended closes (the rest is never read)")
  func earlyAnswer() {
    var machine = Machine(now: t0)
    _ = run { machine.head(.stream("upload", size: 100), now: t0, into: &$0) }
    #expect(
      run { machine.answer(.text(.internalServerError, "over"), request: 1, now: t0, into: &$0) }
        == ["write 500 closing settles", "unschedule"])
    #expect(run { machine.body(Self.bytes(10), now: t0, take: { _ in true }, into: &$0) } == [])
  }

  @Test("a connection closed mid-request: what was under way is abandoned, the answer settled")
  func closedMidRequest() {
    var asking = Machine(now: t0)
    _ = run { asking.head(.gather("prepare", limit: 100), now: t0, into: &$0) }
    _ = run { asking.end(into: &$0) }
    asking.waiting(1, on: "asked s1")
    #expect(run { asking.closed(into: &$0) } == ["abandoned asked s1", "answered"])
    var uploading = Machine(now: t0)
    _ = run { uploading.head(.stream("upload", size: 100), now: t0, into: &$0) }
    #expect(run { uploading.closed(into: &$0) } == ["abandoned upload", "answered"])
    var gathering = Machine(now: t0)
    _ = run { gathering.head(.gather("json", limit: 100), now: t0, into: &$0) }
    _ = run { gathering.body(Self.bytes(5), now: t0, take: { _ in true }, into: &$0) }
    #expect(run { gathering.closed(into: &$0) } == ["giveBack 5", "answered"])
    // Closed: nothing more happens.
    #expect(run { gathering.head(.answer(.text(.ok, "")), now: t0, into: &$0) } == [])
  }

  @Test("a long answer written by its endpoint, then the next request")
  func responding() {
    var machine = Machine(now: t0)
    _ = run { machine.head(.gather("download", limit: 4096), now: t0, into: &$0) }
    _ = run { machine.end(into: &$0) }
    machine.responding(1)
    // A download's silence is its own stall's to judge.
    #expect(run { machine.idleTimeout(into: &$0) } == [])
    #expect(
      run { machine.responseEnded(1, closing: false, now: t0, into: &$0) }
        == ["answered", "idle", "schedule"])
    var cut = Machine(now: t0)
    _ = run { cut.head(.gather("download", limit: 4096), now: t0, into: &$0) }
    _ = run { cut.end(into: &$0) }
    cut.responding(1)
    #expect(
      run { cut.responseEnded(1, closing: true, now: t0, into: &$0) } == ["answered", "close"])
  }

  @Test("at most so many requests a connection: the last answer closes it")
  func requestCap() {
    var machine = Machine(limits: .init(requestsPerConnection: 2), now: t0)
    _ = run { machine.head(.answer(.text(.ok, "")), now: t0, into: &$0) }
    #expect(
      run { machine.head(.answer(.text(.ok, "")), now: t0, into: &$0) }
        == ["busy", "started", "unschedule", "write 200 closing settles", "unschedule"])
  }
}
