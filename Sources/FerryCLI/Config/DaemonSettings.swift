/// The `[daemon]` table of Ferry's config file: what `ferry daemon` reads besides `[receive]`.
struct DaemonSettings: Sendable, Equatable {
  /// Whether offers waiting for a person, and outbox entries delivered or failed, raise
  /// desktop notifications (when there is a session bus).
  var notify = true
  /// How many days a send queued for when its peer is seen waits (and an ended one is listed).
  var outboxDays: Double = 7
  /// How many transfers the history keeps.
  var history = 500
  /// Where the control API's socket is (default: `$XDG_RUNTIME_DIR/ferry/api.sock`, else
  /// `run/api.sock` in Ferry's home).
  var socket: String?
  /// Whether the daemon serves its web page (`ferry ui`).
  var ui = true
  /// The web page's port on 127.0.0.1 and ::1 (nil or 0: one the system picks at each start,
  /// so that a page's origin is never one somebody else could have used before).
  var uiPort: Int?

  /// The keys `[daemon]` takes.
  static let keys = ["notify", "outbox_days", "history", "socket", "ui", "ui_port"]
}
