import Ferry
import Foundation
import Testing

/// A certificate and key made by openssl, and its fingerprint as openssl prints it.
func opensslCredentials() async throws -> (
  certificate: String, key: String, fingerprint: Fingerprint
) {
  let directory = NSTemporaryDirectory() + "ferry-openssl-\(UUID().uuidString)"
  try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
  let (certificate, key) = ("\(directory)/cert.pem", "\(directory)/key.pem")
  let made = try await run(
    "/usr/bin/openssl",
    [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
      "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=openssl-peer",
    ])
  try #require(made.status == 0, "\(made.stderr)")
  let printed = try await run(
    "/usr/bin/openssl", ["x509", "-noout", "-fingerprint", "-sha256", "-in", certificate])
  let hex = try #require(printed.stdout.split(separator: "=").last)
  return (
    certificate, key,
    try Fingerprint(parsing: hex.trimmingCharacters(in: .whitespacesAndNewlines))
  )
}

/// A listening TCP socket on 127.0.0.1 with a kernel-chosen port.
func loopbackListener() -> (socket: Int32, port: UInt16) {
  let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  _ = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      bind(listener, $0, length) == 0 && listen(listener, 1) == 0
        && getsockname(listener, $0, &length) == 0
    }
  }
  return (listener, UInt16(bigEndian: address.sin_port))
}

/// A port on 127.0.0.1 that was free a moment ago, for a child that must be told its port.
func freeLoopbackPort() -> UInt16 {
  let (listener, port) = loopbackListener()
  close(listener)
  return port
}

/// A program that is not a Ferry peer: answers its first connection on 127.0.0.1 with `answer`
/// (e.g. an HTTP error, as a web server would to a TLS ClientHello) and closes it. The blocking
/// accept runs on a thread of its own, never on Swift's cooperative pool.
final class OneShotServer: Sendable {
  let port: UInt16

  init(answer: [UInt8]) {
    let (listener, port) = loopbackListener()
    self.port = port
    Thread.detachNewThread {
      defer { close(listener) }
      var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
      // Harness.patience: the client may be slow to start on a loaded machine.
      guard poll(&poller, 1, 60_000) > 0 else { return }
      let connection = accept(listener, nil, nil)
      guard connection >= 0 else { return }
      var buffer = [UInt8](repeating: 0, count: 4096)
      var timeout = timeval(tv_sec: 5, tv_usec: 0)
      setsockopt(
        connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
      _ = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
      _ = answer.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      close(connection)
    }
  }
}

/// Waits until something listens on 127.0.0.1:`port` (TCP) — bound to it, to 0.0.0.0 or to
/// `::` (dual-stack) — at most `timeout`: read from /proc/net/tcp and tcp6, so nothing connects
/// and a server that accepts only once is not used up.
func waitUntilListening(port: UInt16, timeout: Duration = Harness.patience) async -> Bool {
  let portHex = String(format: ":%04X", port)
  let addresses: Set<Substring> = [
    "0100007F", "00000000", "00000000000000000000000000000000",
    "00000000000000000000FFFF0100007F",
  ]
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
      let text = (try? String(contentsOfFile: table, encoding: .utf8)) ?? ""
      let listening = text.split(separator: "\n").contains { line in
        let fields = line.split(separator: " ")
        guard fields.count > 3, fields[3] == "0A", fields[1].hasSuffix(portHex) else {
          return false
        }
        return addresses.contains(fields[1].dropLast(portHex.count))
      }
      if listening { return true }
    }
    try? await Task.sleep(for: .milliseconds(20))
  }
  return false
}
