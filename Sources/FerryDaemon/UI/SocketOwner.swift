import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Which user owns the other end of a loopback TCP connection, from the kernel's socket tables
/// (`/proc/net/tcp`, `/proc/net/tcp6` of this network namespace: the row whose local address is
/// the client's and whose remote address is the server's). A TCP socket has no SO_PEERCRED;
/// on loopback both ends are this machine's, so the table names the client's owner — what the
/// web page's server checks, as the API's socket does, before reading a byte. Any thread;
/// reads /proc.
package enum SocketOwner {
  /// The uid owning the socket at `client` connected to `server` (both `ip`, `port`); nil
  /// when no such row is found (the client went away, or /proc is not there).
  package static func uid(client: (ip: String, port: Int), server: (ip: String, port: Int))
    -> uid_t?
  {
    guard let local = entry(client.ip, client.port), let remote = entry(server.ip, server.port)
    else { return nil }
    let table = local.count > 13 ? "/proc/net/tcp6" : "/proc/net/tcp"
    // The kernel walks its table afresh at each read(2): a socket may be missed when others
    // come and go between two reads. Read in one call with room for the whole table, and
    // look again (three times at most) before giving up.
    for _ in 0..<3 {
      guard let text = read(table) else { return nil }
      if let owner = uid(in: text, local: local, remote: remote) { return owner }
    }
    return nil
  }

  /// The text of `path` (a /proc table), read with as few read(2) calls as its size allows
  /// (buffers of 1 MiB, 16 MiB at most).
  static func read(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 20)
    while bytes.count < 16 << 20 {
      let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      guard count > 0 else { break }
      bytes += chunk[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  /// The uid of the established row of `table` (the text of /proc/net/tcp or tcp6) from
  /// `local` to `remote` (``entry(_:_:)``'s form). A row in another state is not an owner: a
  /// socket closed already (FIN_WAIT, TIME_WAIT) is shown with uid 0 and inode 0, whoever
  /// opened it.
  static func uid(in table: String, local: String, remote: String) -> uid_t? {
    for line in table.split(separator: "\n").dropFirst() {
      let fields = line.split(separator: " ", omittingEmptySubsequences: true)
      // sl, local_address, rem_address, st, tx_queue:rx_queue, tr:tm->when, retrnsmt, uid,
      // timeout, inode, …
      guard fields.count > 9, fields[1] == local, fields[2] == remote, fields[3] == "01",
        fields[9] != "0"
      else { continue }
      return uid_t(fields[7])
    }
    return nil
  }

  /// An address as the kernel's table writes it: the address's 32-bit words in host order,
  /// in upper-case hex, a colon, the port in four hex digits (`0100007F:1F90`); nil for text
  /// that is not an IP address.
  static func entry(_ ip: String, _ port: Int) -> String? {
    var bytes: [UInt8]
    var v4 = in_addr()
    var v6 = in6_addr()
    if inet_pton(AF_INET, ip, &v4) == 1 {
      bytes = withUnsafeBytes(of: &v4) { Array($0) }
    } else if inet_pton(AF_INET6, ip, &v6) == 1 {
      bytes = withUnsafeBytes(of: &v6) { Array($0) }
    } else {
      return nil
    }
    // Each 32-bit word as the kernel prints it: %08X of the word read in this machine's
    // byte order.
    var hex = ""
    for word in stride(from: 0, to: bytes.count, by: 4) {
      let value = bytes[word..<word + 4].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
      hex += String(format: "%08X", value)
    }
    return hex + ":" + String(format: "%04X", port)
  }
}
