import Foundation

/// Opens a link or a folder in the user's desktop with `xdg-open` (Debian's xdg-utils): the
/// browser for `ferry ui`, the file manager for the page's "Open folder". Any thread.
package enum DesktopOpener {
  /// Whether there is a desktop to open things on: `DISPLAY` or `WAYLAND_DISPLAY` is set.
  package static var hasDesktop: Bool {
    let environment = ProcessInfo.processInfo.environment
    return !(environment["DISPLAY"] ?? "").isEmpty
      || !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty
  }

  /// Opens `target` with xdg-open: false when there is no desktop, xdg-open is missing, or it
  /// fails within 5 s (one still running then is a program it started in the foreground: it
  /// is left running).
  package static func open(_ target: String) async -> Bool {
    guard hasDesktop, let opener = executable("xdg-open") else { return false }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: opener)
    process.arguments = [target]
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { return false }
    for _ in 0..<50 where process.isRunning {
      try? await Task.sleep(for: .milliseconds(100))
    }
    return process.isRunning || process.terminationStatus == 0
  }

  /// The path of `name` in `PATH`'s absolute folders (a relative one, `.` say, could be the
  /// folder received files land in), when it is there.
  package static func executable(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").filter { $0.hasPrefix("/") }.map { "\($0)/\(name)" }
      .first { FileManager.default.isExecutableFile(atPath: $0) }
  }
}
