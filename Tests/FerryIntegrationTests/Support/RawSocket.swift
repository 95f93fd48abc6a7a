import Foundation

/// A plain TCP connection for tests that play a broken or hostile client.
final class RawSocket {
  let fd: Int32

  /// Connects to 127.0.0.1:`port`.
  init(port: UInt16) throws {
    fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EMFILE) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Foundation.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    guard result == 0 else {
      close(fd)
      throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECONNREFUSED)
    }
  }

  deinit {
    close(fd)
  }

  /// Sends bytes (ignoring a peer that already closed).
  func send(_ bytes: [UInt8]) {
    _ = bytes.withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
  }

  /// Waits until the peer closes the connection (read returns 0 or an error), discarding what
  /// it sends; true if it closed within `timeout`.
  func waitForClose(timeout: Duration) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    var buffer = [UInt8](repeating: 0, count: 4096)
    while ContinuousClock.now < deadline {
      var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      if poll(&poller, 1, 0) > 0 {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count <= 0 { return true }
        continue
      }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return false
  }
}
