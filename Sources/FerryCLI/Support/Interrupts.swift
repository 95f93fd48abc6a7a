import Dispatch
import Foundation

/// Turns SIGINT and SIGTERM into an orderly exit: the cleanup runs (withdrawing mDNS records,
/// cancelling transfers), then the process exits 130 — never 0.
enum Interrupts {
  nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []

  /// Installs the handler; call once, early, from the main task.
  static func onInterrupt(_ cleanup: @escaping @Sendable () -> Void) {
    for signalNumber in [SIGINT, SIGTERM] {
      signal(signalNumber, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
      source.setEventHandler {
        cleanup()
        exit(ExitStatus.interrupted.rawValue)
      }
      source.resume()
      sources.append(source)
    }
  }
}
