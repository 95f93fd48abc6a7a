import Ferry

/// Where a LocalSend device listens, and how it must prove itself.
public struct LocalSendTarget: Sendable, CustomStringConvertible {
  /// Its address (IPv4, IPv6 or a name).
  public var host: String
  /// Its HTTP(S) port.
  public var port: Int
  /// The fingerprint its certificate must have (as it announced it); nil accepts any (an
  /// older app reached by address: nothing announced one), and the one presented is reported.
  public var fingerprint: Fingerprint?
  /// Plain HTTP (its "encryption off"): nothing is verified.
  public var plainHTTP: Bool

  /// Makes one from its fields.
  public init(host: String, port: Int, fingerprint: Fingerprint?, plainHTTP: Bool = false) {
    self.host = host
    self.port = port
    self.fingerprint = fingerprint
    self.plainHTTP = plainHTTP
  }

  /// `host:port` (`[v6]:port`), or the error in words.
  public var description: String {
    host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
  }
}

/// How a LocalSend device took a text message.
public enum LocalSendTextOutcome: Sendable, Equatable {
  /// It showed the text (its 204).
  case shown
  /// It took the text as a file (`message.txt`): it answered with a token, and the text was
  /// uploaded.
  case file
}

/// Why sending to a LocalSend device failed.
public enum LocalSendSendError: Error, Sendable, CustomStringConvertible {
  /// The person (or the app's policy) declined (403).
  case declined(String)
  /// Another session is under way there (409).
  case busy
  /// It wants a PIN, or the PIN given is wrong (401).
  case pinRequired
  /// Too many wrong PINs from here (429).
  case tooManyPinAttempts
  /// It refused the files for another reason (its status and words).
  case refused(Int, String)
  /// The request itself failed.
  case request(LocalSendRequestError)
  /// A file could not be read here.
  case unreadable(String)
  /// Cancelled here.
  case cancelled

  /// `host:port` (`[v6]:port`), or the error in words.
  public var description: String {
    switch self {
    case .declined(let why): return why.isEmpty ? "declined" : "declined: \(why)"
    case .busy: return "the device is busy with another transfer"
    case .pinRequired: return "the device wants a PIN (--pin), or the PIN given is wrong"
    case .tooManyPinAttempts: return "too many wrong PINs: the device refuses this address for now"
    case .refused(let status, let why):
      return "refused (HTTP \(status))\(why.isEmpty ? "" : ": \(why)")"
    case .request(let error): return error.description
    case .unreadable(let why): return "cannot read \(why)"
    case .cancelled: return "cancelled"
    }
  }
}

/// One file as sent to a LocalSend device, and how it ended.
public struct LocalSendSentFile: Sendable {
  /// Its path as offered (`/`-joined).
  public let path: String
  /// Its size in bytes, as announced.
  public let size: UInt64
  /// Its SHA-256 (lower-case hex), as announced.
  public let sha256: String?
  /// The same SHA-256 as its 32 bytes.
  public var digest: [UInt8]? {
    sha256.flatMap(LocalSendJSON.hexBytes).flatMap { $0.count == 32 ? $0 : nil }
  }
  /// nil while it was not sent; its HTTP status once it was (200: stored and, when the
  /// receiver checks it, verified).
  public var status: Int?
  /// Why it failed, in the receiver's words.
  public var reason: String?
  /// Whether the receiver left it out (it did not ask for it).
  public var skipped = false
}
