import Ferry
import Foundation

/// The port the last `ferry receive` or `ferry daemon` of this FERRY_HOME listened on
/// (`receive-port` there): the next one started without a port tries it first, so that a
/// sender that remembers this machine's address (``KnownPeers/Entry/addresses``) reaches it
/// again where discovery does not go. Any thread.
enum LastPort {
  private static var path: String {
    FerryHome.defaultDirectory.appendingPathComponent("receive-port").path
  }

  /// The port written last; nil when none was, or the file holds anything but a port.
  static func read() -> UInt16? {
    guard let data = FileManager.default.contents(atPath: path), data.count <= 8,
      let text = String(data: data, encoding: .utf8),
      let port = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines)), port > 0
    else { return nil }
    return port
  }

  /// Records `port`, bound when `preferred` (what ``read()`` gave) was tried first: not when
  /// the preferred port was taken (by a daemon of this home, say, whose port it stays), nor 0
  /// (a listener that has none). A failure to write only costs the next start its old port.
  static func record(_ port: UInt16, preferred: UInt16?) {
    guard port > 0, preferred == nil || preferred == port, port != read() else { return }
    try? FerryHome.prepare(FerryHome.defaultDirectory)
    try? Data("\(port)\n".utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
  }
}
