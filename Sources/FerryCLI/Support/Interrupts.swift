import Dispatch
import Foundation
import Synchronization

/// Turns SIGINT and SIGTERM into an orderly exit: the cleanup runs (withdrawing mDNS records,
/// cancelling transfers), then the process exits 130 (a second signal exits at once) — never 0, even if the cleanup lets the
/// command's main path finish first (``FerryMain`` exits through ``exit(_:)``).
///
/// The signal handler writes a byte to a pipe; a thread of its own reads it and starts the
/// cleanup, in a task it waits for.
/// Exactly one thread calls exit(3) (two at once is undefined behaviour): whichever claims
/// ``exitClaimed`` first, and never before the cleanup has finished.
enum Interrupts {
  private static let interrupted = Atomic<Bool>(false)
  private static let exitClaimed = Atomic<Bool>(false)
  /// The status an interrupted process exits with: 130, or 0 for a command whose normal end
  /// is a signal (``stoppingIsSuccess()``).
  private static let interruptedStatus = Atomic<Int32>(ExitStatus.interrupted.rawValue)
  private static let cleanup = Mutex<(@Sendable () async -> Void)?>(nil)
  /// Signalled once the cleanup has finished.
  private static let cleanedUp = DispatchSemaphore(value: 0)
  /// The longest the main path waits for the cleanup before exiting anyway.
  private static let cleanupLimit: DispatchTimeInterval = .seconds(8)

  /// Whether SIGINT or SIGTERM arrived.
  static var wasInterrupted: Bool { interrupted.load(ordering: .acquiring) }

  /// If an interrupt is being handled, waits for its
  /// cleanup to finish (at most ``cleanupLimit``), then exits 130 unless the handler already
  /// is exiting.
  private static func exitIfInterrupted() {
    guard wasInterrupted else { return }
    _ = cleanedUp.wait(timeout: .now() + cleanupLimit)
    exitOnce()
  }

  /// Ends the process with `status` — the main path's exit. Should an interrupt be handled
  /// meanwhile, the process exits 130 after its cleanup instead; either way only one thread
  /// calls exit(3).
  static func exit(_ status: Int32) -> Never {
    exitIfInterrupted()
    guard !exitClaimed.exchange(true, ordering: .acquiringAndReleasing) else {
      DispatchSemaphore(value: 0).wait()
      fatalError("unreachable: the process is exiting")
    }
    // A signal that came after the check above: its cleanup is cut short, but the status
    // still says the command was interrupted.
    StandardStream.flushAll()
    Foundation.exit(wasInterrupted ? interruptedStatus.load(ordering: .acquiring) : status)
  }

  /// SIGTERM and SIGINT are how this command ends when all is well (`ferry daemon`, stopped by
  /// its service manager): once its cleanup is done, it exits 0, not 130.
  static func stoppingIsSuccess() {
    interruptedStatus.store(0, ordering: .releasing)
  }

  /// Sets what an interrupt must undo (replacing what was set before) and, the first time,
  /// installs the signal handlers. Call from the main task; `action` runs in a task of its
  /// own. With `reportingTo`, the interruption is reported as a failure (an `error` event with
  /// code `interrupted`, and `ferry: error: ` and `message()` on stderr) once the cleanup is
  /// done: for commands where Ctrl-C stops work under way rather than being the normal way to
  /// stop.
  static func onInterrupt(
    reportingTo output: EventWriter? = nil,
    message: @escaping @Sendable () -> String = { "interrupted" },
    _ action: @escaping @Sendable () async -> Void
  ) {
    let first = cleanup.withLock { cleanup in
      defer {
        cleanup = {
          await action()
          output?.failure(
            CLIFailure(status: .interrupted, message: message(), code: .interrupted))
        }
      }
      return cleanup == nil
    }
    guard first else { return }
    // A handler of our own, in place from this call on: a signal that came while a dispatch
    // signal source was still being registered (after SIG_IGN, before the source was armed —
    // seconds on a loaded machine) was lost, and the process kept running.
    var ends: [Int32] = [-1, -1]
    guard pipe(&ends) == 0 else { return }
    for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
    signalPipe = ends[1]
    let readEnd = ends[0]
    Thread.detachNewThread {
      var byte: UInt8 = 0
      while true {
        let count = Foundation.read(readEnd, &byte, 1)
        if count == 1 {
          interruptArrived()
        } else if count < 0, errno == EINTR {
          continue
        } else {
          return
        }
      }
    }
    for signalNumber in [SIGINT, SIGTERM] {
      signal(signalNumber, Self.handler)
    }
  }

  /// The write end of the pipe the signal handler writes to (set before the handler is).
  nonisolated(unsafe) private static var signalPipe: Int32 = -1

  /// The signal handler: one byte into the pipe (write(2) is async-signal-safe), errno kept.
  private static let handler: @convention(c) (Int32) -> Void = { _ in
    let saved = errno
    var byte: UInt8 = 1
    _ = Foundation.write(Interrupts.signalPipe, &byte, 1)
    errno = saved
  }

  /// SIGINT or SIGTERM arrived (on the pipe's reader thread).
  private static func interruptArrived() {
    // The main path is already exiting: nothing to clean up.
    guard !exitClaimed.load(ordering: .acquiring) else { return }
    // A second Ctrl-C does not wait for the cleanup (say, a peer that stopped answering).
    guard !interrupted.exchange(true, ordering: .acquiringAndReleasing) else { exitOnce() }
    let action = cleanup.withLock { $0 }
    // A cleanup that hangs must not keep the process alive.
    DispatchQueue.global().asyncAfter(deadline: .now() + cleanupLimit) { exitOnce() }
    Task {
      await action?()
      cleanedUp.signal()
      exitOnce()
    }
  }

  /// Exits 130 if no other thread has begun to exit; otherwise waits for that exit.
  private static func exitOnce() -> Never {
    if !exitClaimed.exchange(true, ordering: .acquiringAndReleasing) {
      StandardStream.flushAll()
      Foundation.exit(interruptedStatus.load(ordering: .acquiring))
    }
    // Another thread is inside exit(3): the process ends with it.
    DispatchSemaphore(value: 0).wait()
    fatalError("unreachable: the process is exiting")
  }
}
