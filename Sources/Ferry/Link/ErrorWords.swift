import NIOCore
import NIOPosix
import NIOSSL

#if canImport(Glibc)
  import Glibc
#endif

/// Words a person can act on for an error the network stack raised: "connection refused", "the
/// connection was cut off", "the other end refused this machine's certificate" — never a
/// library's case names (`uncleanShutdown`, `I/O on closed channel`, `bind(descriptor:…)`).
public enum ErrorWords {
  /// `error` in words. Errors of Ferry's own (already in words) are described as they
  /// describe themselves. Any thread.
  public static func describe(_ error: any Error) -> String {
    if let failure = error as? NIOConnectionError { return connectFailureReason(failure) }
    if let words = connectionBreak(error) { return words }
    if let io = error as? IOError { return String(cString: strerror(io.errnoCode)).lowercased() }
    if let channel = error as? ChannelError { return words(for: channel) }
    if let ssl = error as? NIOSSLError {
      switch ssl {
      case .uncleanShutdown: return "the connection was cut off"
      case .handshakeFailed: return handshakeFailureReason(ssl, refusal: nil)
      default: return "the TLS connection failed"
      }
    }
    if error is BoringSSLError { return handshakeFailureReason(error, refusal: nil) }
    if error is CancellationError { return "cancelled" }
    return "\(error)"
  }

  private static func words(for error: ChannelError) -> String {
    switch error {
    case .connectTimeout: return "no answer (connection timed out)"
    case .ioOnClosedChannel, .alreadyClosed, .eof: return "the connection was closed"
    case .outputClosed: return "the connection was closed for writing"
    case .inputClosed: return "the connection was closed for reading"
    default: return "the connection failed"
    }
  }
}
