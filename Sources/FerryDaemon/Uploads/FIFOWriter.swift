import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The writing end of one uploaded file's FIFO, whose reader is the send reading that file as
/// a stream. It is opened only once that reader holds the FIFO open (a FIFO's bytes are gone
/// when the last end closes, so the writer waits for the reader), then written in `poll(2)`
/// steps of a fifth of a second that look at `ended` — the send over, the upload abandoned —
/// so that nothing waits for a reader that will never read. Every system call runs on a queue
/// of its own, never on the threads async tasks run on; `SIGPIPE` is blocked on the thread
/// that writes (a reader gone is an `EPIPE`, not the daemon's death). One call at a time.
final class FIFOWriter: Sendable {
  /// Why bytes could not be written.
  enum Failure: Error, Sendable, Equatable {
    /// `ended` said so: the send is over, or the upload was abandoned.
    case ended
    /// `skipped` said so: the send reads a later file (its receiver skipped this one).
    case skipped
    /// The reader closed its end (the send stopped reading).
    case readerGone
    /// A system call failed, in these words.
    case failed(String)
  }

  private let path: String
  private let ended: @Sendable () -> Bool
  private let skipped: @Sendable () -> Bool
  private let queue = DispatchQueue(label: "ferry.upload-fifo")
  /// The descriptor once opened, -1 before and after; touched on `queue` only.
  private let descriptor = Mutex<Int32>(-1)

  /// A writer of the FIFO at `path`, which gives up as soon as `ended` says so — or, while it
  /// waits for its reader, when `skipped` says the reader will never come (looked at twice a
  /// second).
  init(
    path: String, ended: @escaping @Sendable () -> Bool,
    skipped: @escaping @Sendable () -> Bool = { false }
  ) {
    (self.path, self.ended, self.skipped) = (path, ended, skipped)
  }

  deinit {
    let fd = descriptor.withLock { $0 }
    if fd >= 0 { Glibc.close(fd) }
  }

  /// Waits for the FIFO's reader, then opens it for writing.
  ///
  /// - Throws: ``Failure``.
  func open() async throws {
    try await run { try self.openNow() }
  }

  /// Writes all of `bytes`, waiting as long as the reader is slow.
  ///
  /// - Throws: ``Failure``.
  func write(_ bytes: ArraySlice<UInt8>) async throws {
    try await run { try self.writeNow(bytes) }
  }

  /// Closes the writing end: the reader sees the file end once it has read what is in the
  /// FIFO. Only after every byte was written — or once the send was stopped, so that an end
  /// never passes for the file's end.
  func close() async {
    try? await run {
      self.descriptor.withLock { fd in
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
      }
    }
  }

  private func run(_ work: @escaping @Sendable () throws -> Void) async throws {
    try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<Void, any Error>) in
      queue.async { continuation.resume(with: Result { try work() }) }
    }
  }

  /// On `queue`.
  private func openNow() throws {
    guard descriptor.withLock({ $0 }) < 0 else { return }
    var tries = 0
    while true {
      let fd = Glibc.open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
      if fd >= 0 {
        descriptor.withLock { $0 = fd }
        return
      }
      switch errno {
      case EINTR: continue
      case ENXIO:
        // No reader yet: the send has not come to this file (a person may be deciding).
        if ended() { throw Failure.ended }
        tries += 1
        if tries % 10 == 0, skipped() { throw Failure.skipped }
        usleep(50_000)
      case let code: throw Failure.failed(String(cString: strerror(code)))
      }
    }
  }

  /// On `queue`.
  private func writeNow(_ bytes: ArraySlice<UInt8>) throws {
    let fd = descriptor.withLock { $0 }
    guard fd >= 0 else { throw Failure.failed("not open") }
    var pipeSignal = sigset_t()
    sigemptyset(&pipeSignal)
    sigaddset(&pipeSignal, SIGPIPE)
    pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
    try bytes.withUnsafeBytes { buffer in
      var offset = 0
      while offset < buffer.count {
        let count = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
        if count > 0 {
          offset += count
          continue
        }
        switch errno {
        case EINTR: continue
        case EAGAIN:
          if ended() { throw Failure.ended }
          var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
          _ = poll(&entry, 1, 200)
          if entry.revents & Int16(POLLERR) != 0 { throw Failure.readerGone }
        case EPIPE:
          // The signal the write raised waits, blocked, on this thread: taken here.
          var now = timespec()
          _ = sigtimedwait(&pipeSignal, nil, &now)
          throw Failure.readerGone
        case let code:
          throw Failure.failed(String(cString: strerror(code)))
        }
      }
    }
  }
}
