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

  @Test("the row from the client to the server gives its uid; no other row does")
  func rows() {
    let table = """
        sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
         0: 0100007F:A025 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
         1: 0100007F:A025 0100007F:BFD6 01 00000000:00000000 00:00000000 00000000     0        0 2 1
         2: 0100007F:BFD6 0100007F:A025 01 00000000:00000000 00:00000000 00000000  1000        0 3 1
      """
    #expect(SocketOwner.uid(in: table, local: "0100007F:BFD6", remote: "0100007F:A025") == 1000)
    #expect(SocketOwner.uid(in: table, local: "0100007F:BFD7", remote: "0100007F:A025") == nil)
    #expect(SocketOwner.uid(in: table, local: "0100007F:A025", remote: "0100007F:BFD6") == 0)
    #expect(SocketOwner.uid(in: "", local: "0100007F:BFD6", remote: "0100007F:A025") == nil)
  }
}
