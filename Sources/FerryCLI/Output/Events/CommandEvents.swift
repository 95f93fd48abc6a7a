/// `error`: the command's failure (`exit`: its exit status), or — with `peer`, and `exit`
/// null — one receiver's or one file's (`path`, on `receive`), the command going on.
struct Failure: EventRecord {
  static let events: [Event] = [.error]
  let code: String
  let exit: Int?
  let message: String
  let peer: String?
  let path: String?

  init(
    code: ErrorCode, exit: ExitStatus? = nil, message: String, peer: String? = nil,
    path: String? = nil
  ) {
    self.code = code.rawValue
    self.exit = exit.map { Int($0.rawValue) }
    self.message = message
    self.peer = peer
    self.path = path
  }
}

/// `check`: one of `doctor`'s findings (`fix` null when nothing is to be done).
struct Check: EventRecord {
  static let events: [Event] = [.check]
  let name: String
  let status: String
  let message: String
  let fix: String?
}

/// `identity`: this machine's key.
struct IdentityShown: EventRecord {
  static let events: [Event] = [.identity]
  let fingerprint: String
  let fingerprintGrouped: String
  let short: String
  let certificate: String
  let directory: String
}

/// `peer`: one peer this machine knows (`peers`).
struct KnownPeer: EventRecord {
  static let events: [Event] = [.peer]
  let name: String
  let fingerprint: String
  let trusted: Bool
  let firstSeen: String
  let lastSeen: String
  /// Where it was last reached as a receiver, most recent first.
  let addresses: [String]
  /// When it was last reached there (null: never).
  let reachedAt: String?
}

/// `ferry peers --json`: an address the user named (`ferry peers add`).
struct NamedPeer: EventRecord {
  static let events: [Event] = [.namedAddress]
  let name: String
  let address: String
  /// Its key, once given or learnt at the first contact (null before).
  let fingerprint: String?
  /// "peers" (`ferry peers add`, in peers.json) or "config" (a `[peers.NAME]` table).
  let source: String
}
