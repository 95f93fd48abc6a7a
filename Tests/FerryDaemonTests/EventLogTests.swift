import Testing

@testable import FerryDaemon

/// The daemon's event log: numbered records, replay after a cursor, and readers that are let
/// go when they fall behind.
@Suite("The event log")
struct EventLogTests {
  @Test("records are numbered from 1 with the id first; the ring keeps the last ones")
  func ring() {
    let log = EventLog(capacity: 3)
    for index in 1...5 { log.append(#"{"event":"e\#(index)"}"#) }
    let kept = log.records(after: 0)
    #expect(kept.map(\.id) == [3, 4, 5])
    #expect(kept[0].line == "{\"id\":3,\"event\":\"e3\"}\n")
    #expect(log.records(after: 4).map(\.id) == [5])
    #expect(log.records(after: 99).isEmpty)
    #expect(log.nextID == 6)
  }

  @Test("an empty object still makes valid JSON")
  func emptyObject() {
    let log = EventLog()
    log.append("{}")
    #expect(log.records(after: 0)[0].line == "{\"id\":1}\n")
  }

  @Test("a reader gets the replay after its cursor, then new records, in order")
  func follow() async {
    let log = EventLog(capacity: 10)
    for index in 1...3 { log.append(#"{"n":\#(index)}"#) }
    guard let reader = log.follow(since: 1) else {
      Issue.record("refused")
      return
    }
    log.append(#"{"n":4}"#)
    log.finishAll()
    var ids: [Int64] = []
    for await delivery in reader.stream {
      if case .record(let record) = delivery { ids.append(record.id) }
    }
    #expect(ids == [2, 3, 4])
  }

  @Test("a reader that falls behind by more than its backlog is let go; the others are not")
  func overrun() async {
    let log = EventLog(capacity: 10, readerBacklog: 100)
    guard let slow = log.follow(since: nil), let fast = log.follow(since: nil) else {
      Issue.record("refused")
      return
    }
    let line = #"{"pad":"\#(String(repeating: "x", count: 40))"}"#
    for _ in 0..<3 {
      log.append(line)
      fast.consumed(line.utf8.count + 16)
    }
    var got: [EventLog.Delivery] = []
    for await delivery in slow.stream { got.append(delivery) }
    #expect(got.last == .overrun)
    #expect(got.count == 2)  // one record (58 bytes), then the second passes 100
    #expect(log.readerCount == 1)
  }

  @Test("past the most readers at once, a reader is refused")
  func readerCap() {
    let log = EventLog(maximumReaders: 2)
    let first = log.follow(since: nil)
    let second = log.follow(since: nil)
    #expect(first != nil && second != nil)
    #expect(log.follow(since: nil) == nil)
  }
}
