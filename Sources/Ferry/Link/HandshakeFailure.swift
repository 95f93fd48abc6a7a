internal import FerryWire
import Glibc
import NIOCore
import NIOSSL

/// Words for a connection that the network ended (closed or reset, no TLS alert), nil for
/// any other failure; such a failure is worth trying again, a refusal is not.
func connectionBreak(_ error: any Error) -> String? {
  if let io = error as? IOError {
    switch io.errnoCode {
    case ECONNRESET, ECONNABORTED: return "the connection was reset"
    case EPIPE: return "the connection was broken"
    case ETIMEDOUT, EHOSTUNREACH, ENETUNREACH: return "the connection timed out"
    default: return nil
    }
  }
  if case NIOSSLError.uncleanShutdown = error { return "the connection closed" }
  if let channel = error as? ChannelError, channel == .eof || channel == .ioOnClosedChannel {
    return "the connection closed"
  }
  let text = "\(error)"
  if text.contains("EOF during handshake") || text.contains("eofDuringHandshake") {
    return "the connection closed"
  }
  return nil
}

/// ``connectionBreak(_:)`` during the TLS handshake, in words.
func handshakeInterruption(_ error: any Error) -> String? {
  connectionBreak(error).map { "\($0) during the TLS handshake" }
}

/// Words for why a TLS handshake failed, for ``InvitationError/authenticationFailed(reason:)``.
///
/// BoringSSL reports a stack of coded errors ("…:OPENSSL_internal:WRONG_VERSION_NUMBER at
/// …"); users need to know which end refused what: that the other program is not a Ferry peer,
/// that its key is not the one they named, or that it refused ours.
///
/// - Parameters:
///   - error: what the TLS handler reported.
///   - refusal: why this end refused the peer's certificate, when it did (see
///     ``TLSContexts/clientHandler(expecting:exporter:onRefusal:)``).
func handshakeFailureReason(_ error: any Error, refusal: String?) -> String {
  if let refusal { return refusal }
  let text = "\(error)"
  for (codes, words) in handshakeFailureWords where codes.contains(where: text.contains) {
    return words
  }
  // An unlisted BoringSSL reason: its code in words ("SOME_REASON" → "some reason").
  if let code = text.firstRange(of: "OPENSSL_internal:") {
    let reason = text[code.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" }
    return "TLS handshake failed: \(reason.lowercased().replacing("_", with: " "))"
  }
  return "TLS handshake failed: \(text)"
}

/// BoringSSL reason codes, grouped by what they mean to a user.
private let handshakeFailureWords: [([String], String)] = [
  (
    ["WRONG_VERSION_NUMBER", "HTTP_REQUEST", "PACKET_LENGTH_TOO_LONG", "WRONG_SSL_VERSION"],
    "the other end does not speak TLS: it is not a Ferry peer"
  ),
  (
    ["NO_APPLICATION_PROTOCOL"],
    "the other end speaks TLS but not Ferry's protocol (it refused ALPN '\(WireProtocol.alpn)')"
  ),
  (
    ["UNSUPPORTED_PROTOCOL", "ALERT_PROTOCOL_VERSION"],
    "the other end does not speak TLS 1.3: it is not a Ferry peer, or a very old one"
  ),
  (
    ["CERTIFICATE_REQUIRED", "PEER_DID_NOT_RETURN_A_CERTIFICATE"],
    "a certificate was missing: Ferry peers must both present one"
  ),
  (
    [
      "ALERT_BAD_CERTIFICATE", "ALERT_UNKNOWN_CA", "ALERT_CERTIFICATE_UNKNOWN",
      "ALERT_DECRYPT_ERROR",
    ],
    "the other end refused this machine's certificate"
  ),
]
