import Dispatch
import Foundation
import Synchronization

/// Turns SIGINT and SIGTERM into an orderly exit: the cleanup runs (withdrawing mDNS records,
/// cancelling transfers), then the process exits 130 — never 0, even if the cleanup lets the
/// command's main path finish first (``FerryMain`` checks ``wasInterrupted``).
enum Interrupts {
  private static let interrupted = Atomic<Bool>(false)
  private static let cleanup = Mutex<(@Sendable () -> Void)?>(nil)
  nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []

  /// Whether SIGINT or SIGTERM arrived.
  static var wasInterrupted: Bool { interrupted.load(ordering: .acquiring) }

  /// Called by the main path when it is done: if an interrupt is being handled, waits for the
  /// handler to exit the process (two threads calling exit(3) at once is undefined behaviour);
  /// gives up after a few seconds and exits 130 itself.
  static func exitIfInterrupted() {
    guard wasInterrupted else { return }
    Thread.sleep(forTimeInterval: 5)
    exit(ExitStatus.interrupted.rawValue)
  }

  /// Sets what an interrupt must undo (replacing what was set before) and, the first time,
  /// installs the signal handlers. Call from the main task. With `reportingTo`, the
  /// interruption is reported as a failure (an `error` event with code `interrupted`, and
  /// `ferry: error: interrupted` on stderr) once the cleanup is done: for commands where Ctrl-C
  /// stops work under way rather than being the normal way to stop.
  static func onInterrupt(
    reportingTo output: EventWriter? = nil, _ action: @escaping @Sendable () -> Void
  ) {
    let first = cleanup.withLock { cleanup in
      defer {
        cleanup = {
          action()
          output?.failure(
            CLIFailure(status: .interrupted, message: "interrupted", code: "interrupted"))
        }
      }
      return cleanup == nil
    }
    guard first else { return }
    for signalNumber in [SIGINT, SIGTERM] {
      signal(signalNumber, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
      source.setEventHandler {
        guard !interrupted.exchange(true, ordering: .acquiringAndReleasing) else { return }
        cleanup.withLock { $0 }?()
        exit(ExitStatus.interrupted.rawValue)
      }
      source.resume()
      sources.append(source)
    }
  }
}
