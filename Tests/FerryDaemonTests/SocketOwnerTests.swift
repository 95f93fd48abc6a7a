import Foundation
import Testing

@testable import FerryDaemon

/// Who is at the other end of a loopback connection: the kernel table's row, read as bytes.
@Suite("The owner of a loopback connection")
struct SocketOwnerTests {
  @Test("addresses are written as the kernel writes them")
  func entries() {
    #expect(SocketOwner.entry("127.0.0.1", 8080) == "0100007F:1F90")
    #expect(SocketOwner.entry("::1", 443) == "00000000000000000000000001000000:01BB")
    #expect(SocketOwner.entry("10.1.2.3", 0) == "0302010A:0000")
    #expect(SocketOwner.entry("localhost", 1) == nil)
    #expect(SocketOwner.entry("127.0.0.1 ", 1) == nil)
  }

  @Test("the established row from the client to the server gives its uid; no other row does")
  func rows() {
    let table = """
        sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
         0: 0100007F:A025 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
         1: 0100007F:A025 0100007F:BFD6 01 00000000:00000000 00:00000000 00000000     0        0 2 1
         2: 0100007F:BFD6 0100007F:A025 01 00000000:00000000 00:00000000 00000000  1000        0 3 1
         3: 0100007F:BFD8 0100007F:A025 06 00000000:00000000 03:00001757 00000000     0        0 0 3
         4: 0100007F:BFD9 0100007F:A025 05 00000000:00000000 00:00000000 00000000     0        0 0 3
      """
    #expect(SocketOwner.uid(in: table, local: "0100007F:BFD6", remote: "0100007F:A025") == 1000)
    #expect(SocketOwner.uid(in: table, local: "0100007F:BFD7", remote: "0100007F:A025") == nil)
    #expect(SocketOwner.uid(in: table, local: "0100007F:A025", remote: "0100007F:BFD6") == 0)
    #expect(SocketOwner.uid(in: "", local: "0100007F:BFD6", remote: "0100007F:A025") == nil)
    // Closed already (TIME_WAIT, FIN_WAIT2: uid 0, inode 0, whoever opened it): no owner.
    #expect(SocketOwner.uid(in: table, local: "0100007F:BFD8", remote: "0100007F:A025") == nil)
    #expect(SocketOwner.uid(in: table, local: "0100007F:BFD9", remote: "0100007F:A025") == nil)
  }

  @Test("a real loopback connection's row names this process's user")
  func real() throws {
    let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer {
      close(server)
      close(client)
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    func bound(_ fd: Int32, _ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
      withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { call(fd, $0, length) }
      }
    }
    #expect(bound(server, { bind($0, $1, $2) }) == 0)
    #expect(listen(server, 1) == 0)
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(server, $0, &length) }
    }
    let serverPort = Int(UInt16(bigEndian: address.sin_port))
    #expect(bound(client, { connect($0, $1, $2) }) == 0)
    var mine = sockaddr_in()
    _ = withUnsafeMutablePointer(to: &mine) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(client, $0, &length) }
    }
    let clientPort = Int(UInt16(bigEndian: mine.sin_port))
    let owner = SocketOwner.uid(
      client: ("127.0.0.1", clientPort), server: ("127.0.0.1", serverPort))
    #expect(owner == geteuid())
  }
}
