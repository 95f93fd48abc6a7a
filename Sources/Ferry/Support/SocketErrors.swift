import NIOCore
import NIOPosix

#if canImport(Glibc)
  import Glibc
#endif

/// Words for why a TCP connection to `host`:`port` could not be made, for
/// ``InvitationError/unreachable(reason:)``: "connection refused", "no route to host", "the
/// name could not be resolved", rather than NIO's nested error descriptions.
func connectFailureReason(_ error: any Error, host: String, port: Int) -> String {
  let target = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
  guard let failure = error as? NIOConnectionError else {
    return "\(target): \(plainSocketError(error))"
  }
  if failure.connectionErrors.isEmpty {
    return "\(target): the name could not be resolved"
  }
  // One reason per address tried, without repeats ("refused" on both IPv4 and IPv6 reads once).
  var reasons: [String] = []
  for attempt in failure.connectionErrors {
    let reason = plainSocketError(attempt.error)
    if !reasons.contains(reason) { reasons.append(reason) }
  }
  return "\(target): \(reasons.joined(separator: "; "))"
}

/// Words for why a listener could not bind its port, for
/// ``DiscoveryError/cannotListen(port:reason:)``.
func listenFailureReason(_ error: any Error) -> String {
  if (error as? IOError)?.errnoCode == EADDRINUSE {
    return "another program (another ferry receive?) is using it; choose another port, or let "
      + "the system pick one"
  }
  return plainSocketError(error)
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
