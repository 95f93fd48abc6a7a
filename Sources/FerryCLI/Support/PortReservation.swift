import Foundation

/// A listening TCP socket on all addresses (IPv6 dual-stack) that holds a port for the
/// advertisement. The session layer replaces it with its TLS listener.
final class PortReservation {
  /// The port bound.
  let port: UInt16
  private let descriptor: Int32

  /// Binds `port` (0: any free port) and listens.
  ///
  /// - Throws: ``CLIFailure`` with exit status 2 when the port is taken or not allowed.
  init(port requested: UInt16) throws(CLIFailure) {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else {
      throw CLIFailure(
        status: .usage, message: "cannot create a socket: \(errnoText())", code: "port")
    }
    var no: Int32 = 0
    setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &no, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_port = requested.bigEndian
    address.sin6_addr = in6addr_any
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
      }
    }
    guard bound == 0, listen(fd, 64) == 0 else {
      let reason = errnoText()
      close(fd)
      throw CLIFailure(
        status: .usage, message: "cannot listen on port \(requested): \(reason)", code: "port")
    }
    var actual = sockaddr_in6()
    var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
    _ = withUnsafeMutablePointer(to: &actual) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    self.descriptor = fd
    self.port = UInt16(bigEndian: actual.sin6_port)
  }

  deinit {
    close(descriptor)
  }
}

private func errnoText() -> String {
  String(cString: strerror(errno))
}
