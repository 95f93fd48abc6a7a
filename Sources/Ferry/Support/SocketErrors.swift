import NIOCore
import NIOPosix

#if canImport(Glibc)
  import Glibc
#endif

/// `host`:`port` as users write it, an IPv6 host in brackets: the address of
/// ``InvitationError/unreachable(address:reason:)``.
func endpointText(host: String, port: Int) -> String {
  host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
}

/// Words for why a TCP connection could not be made, for
/// ``InvitationError/unreachable(address:reason:)``: "connection refused", "no route to host",
/// "the name could not be resolved", rather than NIO's nested error descriptions.
func connectFailureReason(_ error: any Error) -> String {
  guard let failure = error as? NIOConnectionError else { return plainSocketError(error) }
  if failure.connectionErrors.isEmpty { return "the name could not be resolved" }
  // One reason per address tried, without repeats ("refused" on both IPv4 and IPv6 reads once).
  var reasons: [String] = []
  for attempt in failure.connectionErrors {
    let reason = plainSocketError(attempt.error)
    if !reasons.contains(reason) { reasons.append(reason) }
  }
  return reasons.joined(separator: "; ")
}

/// A socket error in words: the system's text for an errno ("address already in use"), or NIO's
/// description for anything else.
func plainSocketError(_ error: any Error) -> String {
  if let io = error as? IOError {
    return String(cString: strerror(io.errnoCode)).lowercased()
  }
  if case ChannelError.connectTimeout = error {
    return "no answer (connection timed out)"
  }
  return "\(error)"
}
