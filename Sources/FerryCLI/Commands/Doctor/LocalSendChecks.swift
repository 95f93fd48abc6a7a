import Ferry
import FerryAgent
import FerryLocalSend
import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
  import Glibc
#endif

/// `ferry doctor`'s checks for LocalSend (`--localsend`, or `localsend = true` in the config)
/// and the web page (`--web-port`): what `ferry receive --localsend` and `--web` need, each
/// problem with its fix.
enum LocalSendChecks {
  /// LocalSend's UDP (announcements) and TCP (its server) ports, as the firewall treats them.
  static func firewall(port: UInt16) async -> DoctorCheck {
    let targets = [
      FirewallRules.Target(
        name: "localsend-udp", proto: "udp", port: LocalSendProtocol.defaultPort),
      FirewallRules.Target(name: "localsend-tcp", proto: "tcp", port: port),
    ]
    let (findings, read, unread) = await SystemChecks.rules(targets)
    func words(_ finding: FirewallRules.Finding) -> String {
      finding.affects == "localsend-udp"
        ? "LocalSend's announcements (UDP \(LocalSendProtocol.defaultPort))"
        : "LocalSend's connections (TCP \(port))"
    }
    func fix(_ finding: FirewallRules.Finding) -> String {
      let target = targets.first { $0.name == finding.affects } ?? targets[1]
      return "accept it ahead of that rule: '\(finding.acceptCommand(for: target))'"
    }
    let tools = read.joined(separator: " and ")
    if let blocking = findings.first(where: { $0.definite && $0.affects != "loss" }) {
      return .problem(
        "localsend-firewall",
        "\(tools) drops \(words(blocking)): \(blocking.rule); phones and other LocalSend apps "
          + (blocking.affects == "localsend-udp"
            ? "do not see this machine, nor it them" : "cannot send to it"),
        fix: fix(blocking))
    }
    if let maybe = findings.first(where: { !$0.definite && $0.affects != "loss" }) {
      return .warning(
        "localsend-firewall",
        "\(tools) may drop \(words(maybe)): \(maybe.rule), and no rule read here accepts it",
        fix: fix(maybe))
    }
    if read.isEmpty {
      return .warning(
        "localsend-firewall",
        unread.isEmpty
          ? "neither nft nor iptables is installed: no rules to read"
          : "cannot read the rules of \(unread.joined(separator: ", ")) (run as root to check)")
    }
    return .ok(
      "localsend-firewall",
      "\(tools) rules leave UDP \(LocalSendProtocol.defaultPort) and TCP \(port) open")
  }

  /// Whether `ferry receive --localsend` could listen on TCP `port`: a LocalSend app (or
  /// another receiver) running here holds it.
  static func port(_ port: UInt16) -> DoctorCheck {
    let socket = Glibc.socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else {
      return .warning("localsend-port", "cannot try TCP \(port): \(systemWords(errno))")
    }
    defer { close(socket) }
    var one: Int32 = 1
    setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_port = port.bigEndian
    address.sin6_addr = in6addr_any
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
      }
    }
    guard bound == 0 else {
      let why = errno
      if why == EADDRINUSE {
        return .problem(
          "localsend-port",
          "TCP \(port) is taken here (a LocalSend app, or another ferry receive --localsend)",
          fix: "close that app, or run ferry receive --localsend --localsend-port N (phones "
            + "then find it by its announcements, which carry the port)")
      }
      return .warning("localsend-port", "cannot try TCP \(port): \(systemWords(why))")
    }
    return .ok("localsend-port", "TCP \(port) is free for ferry receive --localsend")
  }

  /// The interfaces LocalSend's announcements go out on (up, with multicast, not loopback).
  static func multicast() -> DoctorCheck {
    let devices = (try? System.enumerateDevices()) ?? []
    let names = devices.filter { device in
      guard device.multicastSupported, let ip = device.address?.ipAddress else { return false }
      return device.address?.protocol == .inet && !ip.hasPrefix("127.")
    }.map(\.name)
    let unique = names.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
    guard !unique.isEmpty else {
      return .problem(
        "localsend-multicast",
        "no network interface with an IPv4 address takes multicast: LocalSend devices will "
          + "not see this machine, nor it them",
        fix: "connect to the network the phones are on; meanwhile send with --address "
          + "HOST:PORT (the LocalSend app shows its address in its settings)")
    }
    return .ok(
      "localsend-multicast",
      "announcements go to 224.0.0.167 on \(unique.joined(separator: ", ")) (and "
        + "ff12::fd3a:e420 where there is IPv6)")
  }

  /// The web page's TCP port, as the firewall treats it (`ferry receive --web` and `ferry send
  /// --web` pick a free port unless --web-port fixes one).
  static func web(port: UInt16?) async -> DoctorCheck {
    guard let port else {
      return .warning(
        "web",
        "the web page picks a free port each time, which a firewall that drops what it does "
          + "not know refuses",
        fix: "fix one with --web-port N (and check it: ferry doctor --web-port N)")
    }
    let target = FirewallRules.Target(name: "web", proto: "tcp", port: port)
    let (findings, read, _) = await SystemChecks.rules([target])
    if let blocking = findings.first(where: { $0.affects == "web" }) {
      let message =
        "\(read.joined(separator: " and ")) \(blocking.definite ? "drops" : "may drop") TCP "
        + "\(port): \(blocking.rule); browsers cannot open the page"
      let fix = "accept it ahead of that rule: '\(blocking.acceptCommand(for: target))'"
      return blocking.definite
        ? .problem("web", message, fix: fix) : .warning("web", message, fix: fix)
    }
    return .ok("web", "TCP \(port) is open for the web page")
  }
}
