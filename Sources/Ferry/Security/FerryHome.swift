import Foundation

/// Where Ferry keeps its identity and known peers: `$FERRY_HOME`, else
/// `$XDG_CONFIG_HOME/ferry`, else `~/.config/ferry`.
public enum FerryHome {
  /// The directory Ferry uses by default, from the environment.
  public static var defaultDirectory: URL {
    let environment = ProcessInfo.processInfo.environment
    if let home = environment["FERRY_HOME"], !home.isEmpty {
      return URL(fileURLWithPath: home, isDirectory: true)
    }
    if let config = environment["XDG_CONFIG_HOME"], !config.isEmpty {
      return URL(fileURLWithPath: config, isDirectory: true).appendingPathComponent("ferry")
    }
    return userHome.appendingPathComponent(".config/ferry", isDirectory: true)
  }

  /// The user's home folder as a shell sees it: `$HOME` when it is an absolute path, else the
  /// home folder of the user's passwd entry. (Foundation's `homeDirectoryForCurrentUser`
  /// reads only the passwd entry, so `HOME=/x ferry …` would still write into the real home.)
  /// Reads the environment; any thread.
  public static var userHome: URL {
    if let home = ProcessInfo.processInfo.environment["HOME"], home.hasPrefix("/") {
      return URL(fileURLWithPath: home, isDirectory: true)
    }
    return FileManager.default.homeDirectoryForCurrentUser
  }

  /// Creates `directory` (and its parents) if needed, mode 0700; tightens an existing one to 0700.
  ///
  /// - Throws: ``IdentityError/cannotWrite(path:reason:)`` when it cannot be created.
  package static func prepare(_ directory: URL) throws(IdentityError) {
    let path = directory.path
    do {
      try FileManager.default.createDirectory(
        at: directory, withIntermediateDirectories: true,
        attributes: [.posixPermissions: 0o700])
    } catch {
      throw .cannotWrite(path: path, reason: "\(error.localizedDescription)")
    }
    if chmod(path, 0o700) != 0 {
      throw .cannotWrite(path: path, reason: String(cString: strerror(errno)))
    }
  }
}
