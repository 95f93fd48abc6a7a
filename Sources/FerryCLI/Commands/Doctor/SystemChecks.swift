import Ferry
import FerryAgent
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The checks of `ferry doctor` that read the system: the D-Bus system bus, the avahi-daemon
/// of this network namespace and its configuration, the interfaces it can use, the firewall
/// rules, Ferry's home and identity files, and the destination folder.
enum SystemChecks {
  // MARK: - The system bus

  /// Connects to the system bus's socket (`DBUS_SYSTEM_BUS_ADDRESS`, else the standard path).
  static func bus() -> DoctorCheck {
    let address = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"]
    var path = "/run/dbus/system_bus_socket"
    if let address {
      guard let given = address.split(separator: ";").first.flatMap(Self.unixPath) else {
        return .warning(
          "bus", "DBUS_SYSTEM_BUS_ADDRESS is '\(DisplayText.escaping(address))': not checked")
      }
      path = given
    }
    let socket = Glibc.socket(
      AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard socket >= 0 else {
      return .problem("bus", "cannot make a socket", fix: "check the process's limits")
    }
    defer { close(socket) }
    var socketAddress = sockaddr_un()
    socketAddress.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: socketAddress.sun_path) else {
      return .problem(
        "bus", "the bus path is too long: \(path)", fix: "check DBUS_SYSTEM_BUS_ADDRESS")
    }
    withUnsafeMutableBytes(of: &socketAddress.sun_path) { raw in
      raw.copyBytes(from: bytes)
      raw[bytes.count] = 0
    }
    let connected = withUnsafePointer(to: &socketAddress) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(socket, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard connected == 0 else {
      let reason = systemWords(errno)
      return .problem(
        "bus", "no D-Bus system bus at \(path) (\(reason)); avahi-daemon is reached through it",
        fix: "start it: 'sudo service dbus start' (or 'sudo systemctl start dbus')")
    }
    return .ok("bus", "the D-Bus system bus answers at \(path)")
  }

  private static func unixPath(_ entry: Substring) -> String? {
    guard entry.hasPrefix("unix:") else { return nil }
    for pair in entry.dropFirst(5).split(separator: ",") {
      let parts = pair.split(separator: "=", maxSplits: 1)
      if parts.count == 2, parts[0] == "path" { return String(parts[1]) }
    }
    return nil
  }

  // MARK: - avahi-daemon and its interfaces

  /// The avahi-daemon Ferry talks to: its pid, configuration file, and whether it shares this
  /// process's network namespace (and so its interfaces).
  struct Daemon {
    let pid: Int
    let config: String
    let sameNamespace: Bool
  }

  /// The avahi-daemon on the system bus (the bus says which process owns
  /// org.freedesktop.Avahi), else one running in this network namespace (/proc).
  static func daemon() async -> Daemon? {
    if let pid = await busOwnerPID(), let daemon = daemon(pid: pid) { return daemon }
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    for entry in entries {
      if let pid = Int(entry), let daemon = daemon(pid: pid), daemon.sameNamespace {
        return daemon
      }
    }
    return nil
  }

  /// The process that owns org.freedesktop.Avahi on the system bus (dbus-send).
  private static func busOwnerPID() async -> Int? {
    guard FileManager.default.isExecutableFile(atPath: "/usr/bin/dbus-send"),
      let reply = await CommandOutput.of(
        "/usr/bin/dbus-send",
        [
          "--system", "--print-reply", "--reply-timeout=2000", "--dest=org.freedesktop.DBus",
          "/org/freedesktop/DBus", "org.freedesktop.DBus.GetConnectionUnixProcessID",
          "string:org.freedesktop.Avahi",
        ])
    else { return nil }
    return reply.split(whereSeparator: \.isWhitespace).last.flatMap { Int($0) }
  }

  /// Process `pid` if it is avahi-daemon's main process.
  private static func daemon(pid: Int) -> Daemon? {
    guard let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
      comm.hasPrefix("avahi-daemon"),
      let cmdline = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline")
    else { return nil }
    let arguments = cmdline.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    // avahi-daemon: the main process; its chroot helper has no options of interest.
    guard arguments.first?.contains("avahi-daemon") == true else { return nil }
    var config = "/etc/avahi/avahi-daemon.conf"
    for (index, argument) in arguments.enumerated() {
      if argument.hasPrefix("--file=") { config = String(argument.dropFirst(7)) }
      if argument == "-f" || argument == "--file", index + 1 < arguments.count {
        config = arguments[index + 1]
      }
    }
    let own = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/net")
    let its = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/ns/net")
    return Daemon(pid: pid, config: config, sameNamespace: own != nil && own == its)
  }

  /// The interfaces avahi-daemon uses: those this machine's own advertisement came back on
  /// (`seenOn`), and — for a daemon in this network namespace, whose configuration is read —
  /// the interfaces up with multicast it leaves out (`deny-interfaces`, `allow-interfaces`).
  /// With nothing seen, the configuration alone says which it would use.
  static func interfaces(daemon: Daemon?, seenOn: [DiscoveredAddress]) -> DoctorCheck {
    var used: [String: [String]] = [:]
    for address in seenOn { used[address.interface, default: []].append(address.ip) }
    let usedText = used.keys.sorted().map { "\($0) (\(used[$0]!.joined(separator: ", ")))" }
      .joined(separator: "; ")
    guard let daemon, daemon.sameNamespace else {
      guard !used.isEmpty else {
        return .warning(
          "interfaces",
          daemon == nil
            ? "no avahi-daemon found: interfaces not checked"
            : "avahi-daemon runs in another network namespace: its interfaces are not visible here",
          fix: daemon == nil ? "see the avahi check" : nil)
      }
      return .ok("interfaces", "avahi-daemon announces this machine on \(usedText)")
    }
    let settings = avahiSettings(daemon.config)
    let allow = settings["allow-interfaces"].map(list)
    let deny = Set(settings["deny-interfaces"].map(list) ?? [])
    var usable: [String] = []
    var avoided: [String] = []
    for (name, addresses) in localInterfaces() {
      // avahi-daemon leaves loopback out unless it is named.
      if name == "lo" && !(allow?.contains("lo") ?? false) { continue }
      if deny.contains(name) || allow.map({ !$0.contains(name) }) ?? false {
        avoided.append(name)
        continue
      }
      usable.append("\(name) (\(addresses.joined(separator: ", ")))")
    }
    let source = "avahi-daemon (pid \(daemon.pid), \(daemon.config))"
    let avoidedText =
      avoided.isEmpty
      ? ""
      : "; told to avoid \(avoided.joined(separator: ", ")) (allow-interfaces / deny-interfaces)"
    guard used.isEmpty else {
      return .ok("interfaces", "\(source) announces this machine on \(usedText)\(avoidedText)")
    }
    guard !usable.isEmpty else {
      return .problem(
        "interfaces",
        "\(source) has no interface to use: none is up with multicast and an address"
          + avoidedText,
        fix: "connect to the network, or change allow-interfaces / deny-interfaces in "
          + "\(daemon.config) and restart avahi-daemon")
    }
    return .ok("interfaces", "\(source) can use \(usable.joined(separator: "; "))\(avoidedText)")
  }

  /// `key=value` lines of avahi-daemon.conf's [server] section.
  private static func avahiSettings(_ path: String) -> [String: String] {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [:] }
    var section = ""
    var settings: [String: String] = [:]
    for raw in text.split(separator: "\n") {
      let line = raw.trimmingCharacters(in: .whitespaces)
      if line.hasPrefix("#") || line.hasPrefix(";") || line.isEmpty { continue }
      if line.hasPrefix("[") {
        section = line
        continue
      }
      guard section == "[server]" else { continue }
      let parts = line.split(separator: "=", maxSplits: 1)
      if parts.count == 2 {
        settings[parts[0].trimmingCharacters(in: .whitespaces)] =
          parts[1].trimmingCharacters(in: .whitespaces)
      }
    }
    return settings
  }

  private static func list(_ value: String) -> [String] {
    value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
      !$0.isEmpty
    }
  }

  /// Interfaces that are up and can multicast, with their addresses, by name.
  private static func localInterfaces() -> [(String, [String])] {
    var first: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&first) == 0 else { return [] }
    defer { freeifaddrs(first) }
    var found: [(String, [String])] = []
    var cursor = first
    while let entry = cursor {
      defer { cursor = entry.pointee.ifa_next }
      let flags = Int32(entry.pointee.ifa_flags)
      guard flags & Int32(IFF_UP) != 0,
        flags & Int32(IFF_MULTICAST) != 0 || flags & Int32(IFF_LOOPBACK) != 0,
        let address = entry.pointee.ifa_addr,
        address.pointee.sa_family == sa_family_t(AF_INET)
          || address.pointee.sa_family == sa_family_t(AF_INET6)
      else { continue }
      let name = String(cString: entry.pointee.ifa_name)
      var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
      let length = socklen_t(
        address.pointee.sa_family == sa_family_t(AF_INET)
          ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size)
      guard getnameinfo(address, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0
      else { continue }
      let text = String(
        decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      if let index = found.firstIndex(where: { $0.0 == name }) {
        found[index].1.append(text)
      } else {
        found.append((name, [text]))
      }
    }
    return found
  }

  // MARK: - Ferry's own files

  /// Ferry's home and identity: present, ours, modes that keep the key private.
  static func home() -> DoctorCheck {
    let directory = FerryHome.defaultDirectory
    var status = stat()
    guard stat(directory.path, &status) == 0 else {
      let reason = errno
      guard reason == ENOENT else {
        return .warning(
          "home",
          "\(directory.path) cannot be looked at ("
            + systemWords(reason) + ")",
          fix: "run the doctor as the user who runs ferry (for the system service: as root)")
      }
      return .ok(
        "home", "\(directory.path) does not exist yet: it is made (mode 0700) on first use")
    }
    guard status.st_mode & S_IFMT == S_IFDIR else {
      return .problem(
        "home", "\(directory.path) is not a folder",
        fix: "move it away, or point FERRY_HOME at a folder")
    }
    guard status.st_uid == geteuid() else {
      if geteuid() == 0 {
        // Root looking at a service's home (DynamicUser owns /var/lib/ferry).
        return .warning(
          "home",
          "\(directory.path) belongs to uid \(status.st_uid): fine if that is the service's user")
      }
      return .problem(
        "home", "\(directory.path) belongs to another user (uid \(status.st_uid))",
        fix: "use your own: FERRY_HOME=~/.config/ferry, or chown it")
    }
    if status.st_mode & 0o077 != 0 {
      return .problem(
        "home",
        "\(directory.path) is open to others (mode \(String(status.st_mode & 0o777, radix: 8)))",
        fix: "chmod 700 \(directory.path)")
    }
    let key = directory.appendingPathComponent(Identity.keyFileName).path
    guard stat(key, &status) == 0 else {
      return .ok("home", "\(directory.path) (mode 700); no identity yet: one is made on first use")
    }
    if status.st_mode & 0o077 != 0 {
      return .problem(
        "home",
        "the private key \(key) is readable by others (mode "
          + "\(String(status.st_mode & 0o777, radix: 8)))",
        fix: "chmod 600 \(key), and consider a new identity ('ferry identity' after moving it away)"
      )
    }
    do {
      let identity = try Identity.loadOrCreate(in: directory)
      return .ok(
        "home",
        "\(directory.path) (mode 700), identity \(identity.fingerprint.shortDescription) (key mode 600)"
      )
    } catch {
      return .problem(
        "home", "the identity in \(directory.path) cannot be read: \(error.description)",
        fix:
          "restore the files, or move them away to make a new identity (peers will see KEY CHANGED)"
      )
    }
  }

  /// The destination: exists, writable, how much room. `mkdir`: the receiver creates it.
  static func destination(_ path: String, mkdir: Bool) -> DoctorCheck {
    if mkdir, access(path, F_OK) != 0, errno == ENOENT {
      return .ok("destination", "\(path) does not exist yet: ferry receive creates it (mkdir)")
    }
    do {
      let folder = try ReceiveDestination(path, create: false)
      let free = folder.availableBytes.map { ", \(Quantity.bytes($0)) free" } ?? ""
      return .ok("destination", "\(folder.url.path) is writable\(free)")
    } catch {
      return .problem(
        "destination", error.message,
        fix: "create it (ferry receive --mkdir), or choose another with --dir")
    }
  }
}
