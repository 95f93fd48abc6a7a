import Synchronization

/// The daemon's events, as `--json` writes them, numbered and kept for clients that reconnect:
/// the last ``capacity`` records, and the readers following them (`GET /v1/events`). A reader
/// is handed each new record as it is appended; one that does not keep up is let go once
/// ``readerBacklog`` bytes wait for it, so that a slow or vanished client never holds the
/// daemon. Any thread.
package final class EventLog: Sendable {
  /// One record: its number (from 1, increasing) and its NDJSON line, `id` first.
  package struct Record: Sendable, Equatable {
    /// Its number.
    package let id: Int64
    /// `{"id":N,"event":…}` and a newline.
    package let line: String
  }

  /// What a reader is handed.
  package enum Delivery: Sendable, Equatable {
    /// A record.
    case record(Record)
    /// The reader fell ``EventLog/readerBacklog`` bytes behind and is let go.
    case overrun
  }

  private struct Reader {
    let continuation: AsyncStream<Delivery>.Continuation
    var backlog = 0
  }

  private struct State {
    var records: [Record] = []
    /// Where the oldest record is in ``records`` once it is full (a ring).
    var start = 0
    var nextID: Int64 = 1
    var readers: [Int: Reader] = [:]
    var nextReader = 0
  }

  /// How many records are kept for replay.
  package let capacity: Int
  /// How many bytes may wait for one reader before it is let go.
  package let readerBacklog: Int
  /// How many readers may follow at once (more are refused: the API answers 503) — fewer
  /// than the API's connections, so that readers never take them all.
  package let maximumReaders: Int
  private let state = Mutex(State())

  /// A log keeping `capacity` records, letting a reader fall `readerBacklog` bytes behind, and
  /// holding at most `maximumReaders` readers.
  package init(capacity: Int = 1000, readerBacklog: Int = 1 << 20, maximumReaders: Int = 8) {
    (self.capacity, self.readerBacklog, self.maximumReaders) = (
      capacity, readerBacklog, maximumReaders
    )
  }

  /// Appends `object`, one serialized JSON object (`{"event":…}`), as the next record; hands
  /// it to every reader; keeps it for replay unless `kept` is false (progress, which the next
  /// says all of: the last 1000 events would otherwise be a minute of one transfer). Returns
  /// its number.
  @discardableResult
  package func append(_ object: String, kept: Bool = true) -> Int64 {
    // Records are handed out under the lock (two appends at once reach every reader in
    // order); a reader let go is finished after it, since finishing calls its termination
    // handler, which takes the lock.
    let (id, overrun) = state.withLock { state -> (Int64, [Reader]) in
      let id = state.nextID
      state.nextID += 1
      let body = object.utf8.first == UInt8(ascii: "{") ? object.dropFirst() : Substring(object)
      let separator = body.utf8.first == UInt8(ascii: "}") ? "" : ","
      let record = Record(id: id, line: "{\"id\":\(id)\(separator)\(body)\n")
      if !kept {
        // Handed to readers only.
      } else if state.records.count < capacity {
        state.records.append(record)
      } else {
        state.records[state.start] = record
        state.start = (state.start + 1) % capacity
      }
      var overrun: [Reader] = []
      for (key, var reader) in state.readers {
        reader.backlog += record.line.utf8.count
        if reader.backlog > readerBacklog {
          reader.continuation.yield(.overrun)
          state.readers[key] = nil
          overrun.append(reader)
          continue
        }
        reader.continuation.yield(.record(record))
        state.readers[key] = reader
      }
      return (id, overrun)
    }
    for reader in overrun { reader.continuation.finish() }
    return id
  }

  /// The kept records after `id` (all kept, for 0), oldest first.
  package func records(after id: Int64) -> [Record] {
    state.withLock { state in
      let ordered = Array(state.records[state.start...] + state.records[..<state.start])
      return ordered.filter { $0.id > id }
    }
  }

  /// The number the next record gets.
  package var nextID: Int64 { state.withLock { $0.nextID } }

  /// A reader: the kept records after `since` (none when nil), then every record appended
  /// from now on, until ``Subscription/stream`` is no longer iterated, the reader falls too far
  /// behind (``Delivery/overrun``) or ``finishAll()``. Nil when ``maximumReaders`` follow
  /// already.
  package func follow(since: Int64?) -> Subscription? {
    let (stream, continuation) = AsyncStream<Delivery>.makeStream()
    let key = state.withLock { state -> Int? in
      guard state.readers.count < maximumReaders else { return nil }
      let key = state.nextReader
      state.nextReader += 1
      var reader = Reader(continuation: continuation)
      if let since {
        let ordered = Array(state.records[state.start...] + state.records[..<state.start])
        for record in ordered where record.id > since {
          reader.backlog += record.line.utf8.count
          continuation.yield(.record(record))
        }
      }
      state.readers[key] = reader
      return key
    }
    guard let key else { return nil }
    continuation.onTermination = { [weak self] _ in
      _ = self?.state.withLock { $0.readers.removeValue(forKey: key) }
    }
    return Subscription(stream: stream, log: self, key: key)
  }

  /// `bytes` of what reader `key` was handed have been written out: they no longer count
  /// against its backlog.
  func consumed(_ bytes: Int, reader key: Int) {
    state.withLock { state in
      guard var reader = state.readers[key] else { return }
      reader.backlog = max(0, reader.backlog - bytes)
      state.readers[key] = reader
    }
  }

  /// How many readers follow the log now.
  package var readerCount: Int { state.withLock { $0.readers.count } }

  /// Ends every reader's stream (the daemon is stopping).
  package func finishAll() {
    let readers = state.withLock { state in
      defer { state.readers.removeAll() }
      return Array(state.readers.values)
    }
    for reader in readers { reader.continuation.finish() }
  }

  /// One reader of the log.
  package struct Subscription: Sendable {
    /// What it is handed, in order.
    package let stream: AsyncStream<Delivery>
    fileprivate let log: EventLog
    fileprivate let key: Int

    /// `bytes` of what it was handed were written to its client.
    package func consumed(_ bytes: Int) { log.consumed(bytes, reader: key) }

    /// Its records as the bytes `write` makes of each, for an answer of unknown length. A
    /// reader the log let go (1 MiB behind) ends with an error — its connection is closed,
    /// never ended as if the daemon had stopped; the stream's end (its client gone) ends the
    /// reading.
    package func chunks(_ write: @escaping @Sendable (Record) -> ArraySlice<UInt8>)
      -> AsyncThrowingStream<ArraySlice<UInt8>, any Error>
    {
      let (chunks, sink) = AsyncThrowingStream<ArraySlice<UInt8>, any Error>.makeStream()
      let pump = Task {
        for await delivery in stream {
          switch delivery {
          case .record(let record):
            consumed(record.line.utf8.count)
            sink.yield(write(record))
          case .overrun:
            return sink.finish(throwing: APIProblem(503, "overrun", "the reader fell behind"))
          }
        }
        sink.finish()
      }
      sink.onTermination = { _ in pump.cancel() }
      return chunks
    }
  }
}
