import Foundation

// swift-format-ignore: AlwaysUseLowerCamelCase
/// The error domain of ``MCError``, as MultipeerConnectivity's `MCErrorDomain` (Apple's name,
/// kept so that ported code compiles).
public let MCErrorDomain = "MCErrorDomain"

/// An error of a multipeer session, browser or advertiser, with Apple's codes.
///
/// ```swift
/// do {
///   try session.send(data, toPeers: peers, with: .reliable)
/// } catch MCError.notConnected {
///   …
/// }
/// ```
///
/// `userInfo` holds a description (`NSLocalizedDescriptionKey`) and, when the error comes from
/// Ferry, an `NSError` with the Ferry error's text (`NSUnderlyingErrorKey`).
public struct MCError: CustomNSError, Hashable, Sendable, CustomStringConvertible {
  /// MultipeerConnectivity's error codes.
  public enum Code: Int, Sendable, Hashable {
    /// An unknown error (a Ferry error with no better code: its text is in the description).
    case unknown = 0
    /// The peer is not connected.
    case notConnected = 1
    /// A parameter is not valid (a message over 1 MiB, a resource name or stream name Ferry
    /// cannot carry, a display name or discovery info Ferry cannot publish).
    case invalidParameter = 2
    /// The operation is not supported.
    case unsupported = 3
    /// The connection attempt or transfer timed out.
    case timedOut = 4
    /// The operation was cancelled.
    case cancelled = 5
    /// Multipeer connectivity is not available (avahi-daemon or the system bus is not running).
    case unavailable = 6
  }

  /// The code.
  public let code: Code
  /// What went wrong, for people.
  public let message: String
  /// The text of the Ferry error behind it, if any.
  public let underlying: String?

  /// Makes an error with a message.
  public init(_ code: Code, _ message: String = "", underlying: (any Error)? = nil) {
    self.code = code
    self.message = message
    self.underlying = underlying.map { "\($0)" }
  }

  /// ``MCErrorDomain``.
  public static var errorDomain: String { MCErrorDomain }
  /// The raw value of ``code``.
  public var errorCode: Int { code.rawValue }
  /// The description, and the Ferry error's text.
  public var errorUserInfo: [String: Any] {
    var info: [String: Any] = [NSLocalizedDescriptionKey: description]
    if let underlying {
      info[NSUnderlyingErrorKey] = NSError(
        domain: "Ferry", code: 0, userInfo: [NSLocalizedDescriptionKey: underlying])
    }
    return info
  }

  /// The message, or the code when there is none.
  public var description: String {
    message.isEmpty ? "MCError \(code) (\(code.rawValue))" : message
  }

  /// ``Code-swift.enum/unknown``, for `catch MCError.unknown`.
  public static let unknown = Code.unknown
  /// ``Code-swift.enum/notConnected``, for `catch MCError.notConnected`.
  public static let notConnected = Code.notConnected
  /// ``Code-swift.enum/invalidParameter``, for `catch MCError.invalidParameter`.
  public static let invalidParameter = Code.invalidParameter
  /// ``Code-swift.enum/unsupported``, for `catch MCError.unsupported`.
  public static let unsupported = Code.unsupported
  /// ``Code-swift.enum/timedOut``, for `catch MCError.timedOut`.
  public static let timedOut = Code.timedOut
  /// ``Code-swift.enum/cancelled``, for `catch MCError.cancelled`.
  public static let cancelled = Code.cancelled
  /// ``Code-swift.enum/unavailable``, for `catch MCError.unavailable`.
  public static let unavailable = Code.unavailable
}

extension MCError.Code {
  /// Matches an error that is an ``MCError`` with this code, for `catch MCError.notConnected`.
  public static func ~= (code: MCError.Code, error: any Error) -> Bool {
    (error as? MCError)?.code == code
  }
}
