import Foundation
import Testing

/// Every LocalSend test, one at a time: each side of a test binds port 53317 (TCP and UDP) on
/// its host, as LocalSend apps do.
@Suite("LocalSend", .serialized, .needsToRunOnHostA, .endsItsProcesses)
enum LocalSendTests {}

/// The independent LocalSend peer (Tests/LocalSend/localsend_peer.py, written from the
/// protocol documents and LocalSend's own source, not from Ferry's code), started inside a
/// namespace host. It prints one JSON event per line; its exit status says whether the
/// outcome was the one expected (`--expect`).
enum LocalSendPeer {
  /// The script, found from this source file's place in the repository.
  static var script: String {
    URL(fileURLWithPath: #filePath)
      .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("LocalSend/localsend_peer.py").path
  }

  /// Starts `localsend_peer.py COMMAND ARGUMENTS` on `host`, with its own home and alias,
  /// announcing on the host's test interface only.
  static func start(
    _ command: String, _ arguments: [String], alias: String, on host: String = "b",
    home: String = NSTemporaryDirectory() + "localsend-peer-\(UUID().uuidString)"
  ) throws -> ChildProcess {
    return try ChildProcess(
      Harness.on!,
      [host, "python3", script, command, "--home", home, "--alias", alias, "--interface", "mdns0"]
        + arguments)
  }

  /// Waits for its `listening` event (its server is up).
  static func waitUntilListening(_ peer: ChildProcess) async -> Bool {
    await peer.waitForEvent("listening") != nil
  }

  /// A unique alias, so that a test finds its own peer.
  static func alias(_ label: String) -> String {
    "\(label) \(Int.random(in: 1000...9999))"
  }
}

extension Observation {
  /// Field `key` as a string.
  func string(_ key: String) -> String? { self[key] as? String }
  /// Field `key` as an integer.
  func int(_ key: String) -> Int? { (self[key] as? NSNumber)?.intValue }
  /// Field `key` as a Boolean.
  func bool(_ key: String) -> Bool? { self[key] as? Bool }
  /// Whether field `key` is there and null.
  func isNull(_ key: String) -> Bool { fields[key] is NSNull }
}
