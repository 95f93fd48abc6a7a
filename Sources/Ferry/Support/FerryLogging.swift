import Logging
import Synchronization

/// Where the Ferry library logs: each connection's lifecycle (`info`), discovery events
/// (`debug`, and `notice` when avahi-daemon goes away), and every refusal and cap with its
/// reason — a link closed for a protocol violation or a limit, a connection or invitation
/// turned away, an offer refused, a transfer stalled (`notice`).
///
/// Nothing is logged until the application sets ``logger``: the default discards everything,
/// so a program that uses Ferry prints nothing it did not ask for. Text that came from a peer
/// (names, reasons) is passed as it came: a handler writing to a terminal must escape it.
public enum FerryLogging {
  private static let current = Mutex(
    Logger(label: "ferry", factory: { _ in SwiftLogNoOpLogHandler() }))

  /// The logger every Ferry component logs through. Set it once at start-up, before creating
  /// sessions, advertisers and browsers (each connection takes a copy when it opens). Any
  /// thread.
  public static var logger: Logger {
    get { current.withLock { $0 } }
    set { current.withLock { $0 = newValue } }
  }
}
