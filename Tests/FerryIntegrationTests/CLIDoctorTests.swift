import Foundation
import Testing

/// `ferry doctor` against the real thing: a private avahi-daemon (up), no daemon on the bus
/// (down), and nftables rules in a network namespace of the test's own that drop mDNS or the
/// receiver's port.
@Suite("ferry doctor", .timeLimit(.minutes(2)), .endsItsProcesses)
struct CLIDoctorTests {

  /// The `check` events of a `ferry doctor --json` run, by name.
  static func checks(_ stdout: String) -> [String: [String: Any]] {
    var checks: [String: [String: Any]] = [:]
    for line in stdout.split(separator: "\n") {
      guard let event = jsonObject(String(line)), event["event"] as? String == "check",
        let name = event["name"] as? String
      else { continue }
      checks[name] = event
    }
    return checks
  }

  @Test(
    "avahi up: bus, avahi, interfaces and the advertisement seen back are ok; exit 0",
    .needsLocalAvahi)
  func avahiUp() async throws {
    let result = try await run(
      Harness.ferryBinary,
      ["doctor", "--json", "--dir", try temporaryDirectory("doctor-up").path],
      environment: ["FERRY_HOME": Harness.freshFerryHome()])
    let checks = Self.checks(result.stdout)
    for name in ["bus", "avahi", "interfaces", "advertisement", "firewall", "home", "destination"] {
      #expect(checks[name]?["status"] as? String == "ok", "\(name): \(result.stdout)")
    }
    let interfaces = checks["interfaces"]?["message"] as? String
    #expect(interfaces?.contains("announces this machine on lo") == true, "\(result.stdout)")
    #expect(
      (checks["advertisement"]?["message"] as? String)?.contains("saw it come back") == true)
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
  }

  @Test("avahi down: the bus and avahi are problems with their fixes, exit 1; human lines too")
  func avahiDown() async throws {
    let environment = TestEnvironment.withoutBus()
    let result = try await run(Harness.ferryBinary, ["doctor", "-j"], environment: environment)
    #expect(result.status == 1)
    let checks = Self.checks(result.stdout)
    #expect(checks["bus"]?["status"] as? String == "problem", "\(result.stdout)")
    #expect((checks["bus"]?["fix"] as? String)?.contains("dbus start") == true)
    #expect(checks["avahi"]?["status"] as? String == "problem")
    #expect((checks["avahi"]?["fix"] as? String)?.contains("avahi-daemon") == true)
    #expect(checks["advertisement"]?["status"] as? String == "warning")
    let human = try await run(Harness.ferryBinary, ["doctor"], environment: environment)
    #expect(human.status == 1)
    #expect(
      human.stdout.contains("PROBLEM  bus: no D-Bus system bus at \(TestEnvironment.noBusPath)"),
      "\(human.stdout)")
    #expect(human.stdout.contains("fix: start it"), "\(human.stdout)")
    #expect(human.stdout.contains("2 problems found"), "\(human.stdout)")
  }

  @Test("nftables rules in a namespace of its own: dropped mDNS, then a dropped port, are problems")
  func blockedByFirewall() async throws {
    let namespace = "ferry-doctor-\(getpid())-\(Int.random(in: 0..<10_000))"
    #expect(try await run("/usr/sbin/ip", ["netns", "add", namespace]).status == 0)
    defer { _ = Process.runSync("/usr/sbin/ip", ["netns", "del", namespace]) }
    _ = try await run("/usr/sbin/ip", ["-n", namespace, "link", "set", "lo", "up"])
    /// Loads one input chain holding `rules` (one a line), runs `then` (a shell command, say
    /// the doctor's own fix), then runs the doctor.
    func doctor(
      policy: String = "accept", _ rules: [String], then: String = "true", extra: [String] = [],
      expecting status: Int32 = 1
    ) async throws -> [String: [String: Any]] {
      let rules =
        "table inet t {\n chain input {\n type filter hook input priority 0; policy \(policy);\n"
        + rules.map { " \($0)\n" }.joined() + " }\n}\n"
      let load = try await run(
        "/usr/sbin/ip",
        [
          "netns", "exec", namespace, "/bin/sh", "-c",
          "nft flush ruleset && printf '%s' \"$1\" | nft -f - && eval \"$2\"", "sh", rules, then,
        ])
      #expect(load.status == 0, "\(load.stderr)")
      let result = try await run(
        "/usr/sbin/ip",
        ["netns", "exec", namespace, Harness.ferryBinary, "doctor", "-j", "--port", "52000"]
          + extra,
        environment: TestEnvironment.withoutBus())
      #expect(result.status == status)
      return Self.checks(result.stdout)
    }
    let mdns = try await doctor(["udp dport 5353 drop"])
    #expect(mdns["firewall"]?["status"] as? String == "problem", "\(mdns)")
    #expect(
      (mdns["firewall"]?["message"] as? String)?.contains("drops mDNS (UDP 5353)") == true,
      "\(mdns)")
    // The fix names the table and chain that drop it, and puts the accept ahead of the drop:
    // done as written, the doctor no longer finds the drop.
    let fix = try #require(mdns["firewall"]?["fix"] as? String)
    #expect(fix.contains("'nft insert rule inet t input udp dport 5353 accept'"), "\(fix)")
    let command = String(fix.split(separator: "'")[1])
    let fixed = try await doctor(["udp dport 5353 drop"], then: command)
    #expect(fixed["firewall"]?["status"] as? String == "ok", "\(fixed)")
    let port = try await doctor(["tcp dport { 22, 52000 } reject"])
    #expect(port["firewall"]?["status"] as? String == "problem", "\(port)")
    #expect(
      (port["firewall"]?["message"] as? String)?.contains("drops TCP 52000") == true, "\(port)")
    let open = try await doctor(
      policy: "drop", ["udp dport 5353 accept", "tcp dport 52000 accept"])
    #expect(open["firewall"]?["status"] as? String == "ok", "\(open)")

    // LocalSend's ports and the web page's: each dropped one is a problem with its fix.
    let localsend = try await doctor(
      ["udp dport 53317 drop", "tcp dport 53317 drop", "tcp dport 8080 drop"],
      extra: ["--localsend", "--web-port", "8080"])
    #expect(localsend["localsend-firewall"]?["status"] as? String == "problem", "\(localsend)")
    #expect(
      (localsend["localsend-firewall"]?["message"] as? String)?.contains("UDP 53317") == true,
      "\(localsend)")
    let localFix = try #require(localsend["localsend-firewall"]?["fix"] as? String)
    #expect(localFix.contains("udp dport 53317 accept"), "\(localFix)")
    #expect(localsend["web"]?["status"] as? String == "problem", "\(localsend)")
    #expect(
      (localsend["web"]?["fix"] as? String)?.contains("tcp dport 8080 accept") == true,
      "\(localsend)")
    // A namespace with only loopback has no interface for LocalSend's multicast.
    #expect(localsend["localsend-multicast"]?["status"] as? String == "problem", "\(localsend)")
    #expect(localsend["localsend-port"]?["status"] as? String == "ok", "\(localsend)")
  }
}

extension Process {
  /// Runs a command to its end, for cleanups that cannot await.
  static func runSync(_ path: String, _ arguments: [String]) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    guard (try? process.run()) != nil else { return -1 }
    process.waitUntilExit()
    return process.terminationStatus
  }
}
