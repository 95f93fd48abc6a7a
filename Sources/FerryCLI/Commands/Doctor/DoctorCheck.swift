/// One thing `ferry doctor` looked at: how it stands, in words, and what to do about it.
struct DoctorCheck: Sendable {
  /// How it stands. A warning is worth knowing but does not stop Ferry working.
  enum Status: String, Sendable {
    case ok, warning, problem
  }

  /// Its stable name: `bus`, `avahi`, `interfaces`, `advertisement`, `firewall`, `home`,
  /// `destination`, `multicast`, and LocalSend's and the web page's.
  let name: String
  let status: Status
  /// What was found, in words.
  let message: String
  /// What to do, when something is wrong.
  let fix: String?

  static func ok(_ name: String, _ message: String) -> DoctorCheck {
    DoctorCheck(name: name, status: .ok, message: message, fix: nil)
  }

  static func warning(_ name: String, _ message: String, fix: String? = nil) -> DoctorCheck {
    DoctorCheck(name: name, status: .warning, message: message, fix: fix)
  }

  static func problem(_ name: String, _ message: String, fix: String) -> DoctorCheck {
    DoctorCheck(name: name, status: .problem, message: message, fix: fix)
  }
}
