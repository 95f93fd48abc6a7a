import Foundation
import OpenAPIRuntime
import Synchronization

extension BrowserUploads {
  /// Passes file `index` of upload `id` — `body`, exactly its declared size — to the send, as
  /// it comes: once the send reads that file (its receiver accepted, the files before it
  /// sent), and only as fast as it reads. Returns once the last byte was handed over. A body
  /// cut off, or a task cancelled (the browser went away), cancels the send first — so that
  /// the receiver's transfer is interrupted, never given a shortened file — then ends.
  ///
  /// - Throws: ``APIProblem``: no such upload or file, a file out of order or of the wrong
  ///   length, a body of unknown length, the send over first (409, in its words), the body
  ///   cut off.
  package func write(_ id: String, index: Int, body: HTTPBody) async throws(APIProblem) {
    guard case .known(let length) = body.length, length >= 0 else {
      throw APIProblem(411, "length-required", "a file's bytes come with their Content-Length")
    }
    let source = try uploads.withLock { uploads throws(APIProblem) -> String in
      guard var upload = uploads[id] else {
        throw APIProblem.notFound("no upload \(id) is under way")
      }
      do throws(UploadState.Refusal) {
        try upload.state.begin(index, length: UInt64(length), now: Self.now())
      } catch {
        throw Self.problem(error, index: index)
      }
      uploads[id] = upload
      return upload.sources[index]
    }
    // Cut: the request's connection closed, or its task was cancelled.
    let cut = Flag()
    let writer = FIFOWriter(
      path: source, ended: { [self] in cut.isSet || isOver(id) },
      skipped: readsPast(id, index))
    // On a task of its own, which the upload's watch cancels when the browser stalls or the
    // send ends (a body whose next bytes never come would hold the request for ever).
    let work = Task { [self] () -> Written in
      var written: Int64 = 0
      do {
        turn(id, browser: false)
        do {
          try await writer.open()
        } catch FIFOWriter.Failure.skipped {
          // The receiver has this file: its bytes are read and dropped.
          turn(id, browser: true)
          for try await chunk in body {
            written += Int64(chunk.count)
            turn(id, browser: true)
            if written > length { break }
          }
          return written == length ? .skipped : .cut
        }
        turn(id, browser: true)
        for try await chunk in body {
          turn(id, browser: false)
          guard written + Int64(chunk.count) <= length else { break }
          try await writer.write(chunk)
          written += Int64(chunk.count)
          turn(id, browser: true)
        }
        try Task.checkCancellation()
      } catch {
        // Below: the send is stopped before the FIFO closes.
        return .cut
      }
      return written == length ? .whole : .cut
    }
    uploads.withLock { $0[id]?.writing = work }
    let written = await withTaskCancellationHandler {
      await work.value
    } onCancel: {
      cut.set()
      work.cancel()
    }
    uploads.withLock { $0[id]?.writing = nil }
    if written == .cut {
      // Unless the send ended delivered with this file settled: skipped by its receiver, the
      // last of those it skipped (no later file to show it) — the browser is told all is well.
      guard let entry = sends.outbox.entry(id), case .delivered = entry.state,
        entry.files.indices.contains(index), entry.files[index].isSettled
      else {
        throw await abandon(id, writer, reason: "its bytes stopped before their end")
      }
    }
    // Written whole, or skipped by the receiver (the FIFO never opened: nothing to close).
    await writer.close()
    uploads.withLock { $0[id]?.state.fileDone(now: Self.now()) }
  }

  /// How writing one file ended.
  enum Written: Sendable {
    /// Every byte was handed over.
    case whole
    /// The receiver skipped the file: its bytes were read and dropped.
    case skipped
    /// It did not end whole (cut off, cancelled, the send over).
    case cut
  }

  /// Whose turn it is in upload `id`: the browser's (true) or the send's.
  private func turn(_ id: String, browser: Bool) {
    let now = Self.now()
    uploads.withLock { $0[id]?.state.browserTurn(browser, now: now) }
  }

  /// Ends a file that was not written whole: the send is stopped on both ends (unless it
  /// ended already) and only then is the FIFO closed; the problem to answer with.
  private func abandon(_ id: String, _ writer: FIFOWriter, reason: String) async -> APIProblem {
    // Not under the request's task: a cancelled task would not wait for the send to stop.
    let sends = self.sends
    let (ended, stoppedHere) = await Task {
      var entry = sends.outbox.entry(id)
      let over = entry.map { $0.state.ended || $0.cancelRequested == true } ?? true
      if !over { entry = await sends.cancel(id) }
      await writer.close()
      return (entry, !over)
    }.value
    discardWhenOver(id)
    if case .failed(_, let problem) = ended?.state {
      return APIProblem(409, problem.code, "the send ended: \(problem.message)")
    }
    if case .expired = ended?.state {
      return APIProblem(409, "no-peer", "the send ended: its receiver was not seen in time")
    }
    return APIProblem(
      409, "cancelled", stoppedHere ? "the send was cancelled: \(reason)" : "the send was cancelled"
    )
  }

  /// Forgets upload `id` if its send is over.
  private func discardWhenOver(_ id: String) {
    if sends.outbox.entry(id)?.state.ended != false { discard(id) }
  }

  /// The API's words for a file refused.
  static func problem(_ refusal: UploadState.Refusal, index: Int) -> APIProblem {
    switch refusal {
    case .noSuchFile:
      APIProblem.notFound("the upload has no file \(index) (or it is an empty folder)")
    case .outOfOrder(let expected?):
      APIProblem(409, "out-of-order", "file \(expected) comes next, not \(index)")
    case .outOfOrder(nil):
      APIProblem(409, "out-of-order", "another file is being uploaded, or all were")
    case .wrongSize(let declared):
      APIProblem(400, "wrong-size", "file \(index) was declared \(declared) bytes long")
    }
  }
}

/// A flag set once, from any thread.
final class Flag: Sendable {
  private let value = Atomic<Bool>(false)

  /// Sets it.
  func set() { value.store(true, ordering: .relaxed) }

  /// Whether it was set.
  var isSet: Bool { value.load(ordering: .relaxed) }
}
