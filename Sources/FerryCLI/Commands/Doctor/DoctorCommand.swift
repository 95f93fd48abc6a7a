import ArgumentParser
import Ferry
import FerryLocalSend
import Foundation

/// `ferry doctor`: checks what Ferry needs from this machine and says, for each, what is
/// wrong and how to fix it.
struct DoctorCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "doctor",
    abstract: "Check what Ferry needs here (avahi-daemon, the network, firewall, files).",
    discussion: """
      Checks, and explains with the fix for each: the D-Bus system bus and avahi-daemon; the \
      interfaces avahi-daemon uses (and those it was told to avoid); whether this machine's \
      own advertisement comes back through avahi-daemon; whether peers reached before answer \
      at their remembered addresses while mDNS does not find them (multicast stops at a \
      router); nftables and iptables rules that drop \
      mDNS (UDP 5353) or the receiver's TCP port (--port, or the config's port); Ferry's home \
      and identity files and their modes; the destination folder and its free space; with \
      --localsend (or the config's localsend = true), LocalSend's UDP and TCP 53317 through the \
      firewall, the port free and an interface for its multicast; with --web-port, the web \
      page's port. Exit 0 when every check passes (warnings allowed), 1 otherwise.

      Examples:
        ferry doctor
        ferry doctor --port 52000 --dir ~/Inbox
        ferry doctor --localsend --localsend-port 53318 --web-port 8080
        FERRY_HOME=/var/lib/ferry ferry doctor --config /etc/ferry/config.toml
        ferry doctor --json > ferry-doctor.ndjson
      """)

  @OptionGroup var logging: LogOptions

  @Option(
    name: [.short, .long],
    help: "The folder to check (default: the config's, else the current one).",
    completion: .directory)
  var dir: String?

  @Option(
    help: "The TCP port the receiver uses, to check the firewall for (default: the config's).")
  var port: UInt16?

  @Option(
    help: ArgumentHelp(
      "The config file the receiver reads (default: as ferry receive finds it).",
      valueName: "file"),
    completion: .file(extensions: ["toml"]))
  var config: String?

  @Option(
    parsing: .unconditional,
    help: "The DNS-SD service type to check (an RFC 6335 name).")
  var service: String = ServiceType.ferry.name

  @Flag(
    help: ArgumentHelp(
      "Check what ferry receive --localsend needs too: UDP and TCP 53317 through the "
        + "firewall, the port free, an interface for LocalSend's multicast (on with the "
        + "config's localsend = true)."))
  var localsend = false

  @Option(
    name: .customLong("localsend-port"),
    help: "The LocalSend port to check.")
  var localsendPort: UInt16 = LocalSendProtocol.defaultPort

  @Option(
    name: .customLong("web-port"),
    help: ArgumentHelp(
      "Check the web page's TCP port (what receive and send fix with their own --web-port) "
        + "through the firewall."))
  var webPort: UInt16?

  @Flag(name: [.short, .long], help: "Write one JSON object per check to stdout.")
  var json = false

  func run() async throws {
    let output = EventWriter(json: json)
    let serviceType = try parseServiceType(service)
    // The config's folder and port are what a receiver here would use; a broken config is a
    // finding, not the end of the checks.
    var checks: [DoctorCheck] = []
    var config = ReceiveConfig()
    do {
      config = try ReceiveConfig.load(explicit: self.config)
      if let path = config.path { checks.append(.ok("config", "\(path) is read by ferry receive")) }
    } catch {
      checks.append(.problem("config", error.message, fix: "correct the line it names"))
    }
    let report = { (check: DoctorCheck) in Self.report(check, to: output) }
    checks.forEach(report)
    let bus = SystemChecks.bus()
    report(bus)
    let avahi = Self.avahi(serviceType)
    report(avahi)
    let (advertisement, seenOn) =
      avahi.status == .ok
      ? await Self.advertisement(serviceType)
      : (.warning("advertisement", "not tried: avahi-daemon is not reachable"), [])
    let interfaces = SystemChecks.interfaces(daemon: await SystemChecks.daemon(), seenOn: seenOn)
    report(interfaces)
    report(advertisement)
    let firewall = await SystemChecks.firewall(
      port: port ?? config.port.flatMap { $0 == 0 ? nil : $0 })
    report(firewall)
    let home = SystemChecks.home()
    report(home)
    let destination = SystemChecks.destination(
      dir ?? config.dir ?? ".", mkdir: dir == nil && config.mkdir == true)
    report(destination)
    let multicast = await ReachChecks.multicast(serviceType, avahiUp: avahi.status == .ok)
    report(multicast)
    checks += [bus, avahi, interfaces, advertisement, firewall, home, destination, multicast]
    if localsend || config.localsend == true {
      let local = [
        await LocalSendChecks.firewall(port: localsendPort), LocalSendChecks.port(localsendPort),
        LocalSendChecks.multicast(),
      ]
      local.forEach(report)
      checks += local
    }
    if let webPort {
      let page = await LocalSendChecks.web(port: webPort)
      report(page)
      checks.append(page)
    }
    let problems = checks.filter { $0.status == .problem }.count
    output.say(
      problems == 0
        ? "Everything Ferry needs is in place."
        : "\(Quantity.count(problems, "problem")) found: see the fixes above.")
    if problems > 0 { throw ExitCode(1) }
  }

  /// Prints one check: a line with its status and words, and its fix below.
  static func report(_ check: DoctorCheck, to output: EventWriter) {
    output.emit(
      Check(
        name: check.name, status: check.status.rawValue, message: check.message, fix: check.fix))
    let mark =
      switch check.status {
      case .ok: "ok     "
      case .warning: "warning"
      case .problem: "PROBLEM"
      }
    output.say("\(mark)  \(check.name): \(check.message)")
    if let fix = check.fix { output.say("         fix: \(fix)") }
  }

  /// Whether avahi-daemon answers: a browser can be made.
  static func avahi(_ serviceType: ServiceType) -> DoctorCheck {
    do {
      let browser = try Browser(serviceType: serviceType)
      browser.stop()
      return .ok("avahi", "avahi-daemon answers on the system bus")
    } catch {
      return .problem(
        "avahi",
        "avahi-daemon cannot be reached ("
          + (error.description.split(separator: "\n").first.map(String.init) ?? "") + ")",
        fix: "start it ('sudo service avahi-daemon start' or 'sudo systemctl start avahi-daemon'); "
          + "install it with 'sudo apt install avahi-daemon'. Without it, send with --address")
    }
  }

  /// Publishes a throwaway service and waits (5 s at most) to see it come back through
  /// avahi-daemon, as a nearby machine would; also the addresses (and interfaces) it came
  /// back on.
  static func advertisement(_ serviceType: ServiceType) async -> (DoctorCheck, [DiscoveredAddress])
  {
    let name = "ferry-doctor-\(String(UInt16.random(in: .min ... .max), radix: 16))"
    do {
      let peer = try PeerID(displayName: name, fingerprint: Identity.generate().fingerprint)
      let advertiser = try Advertiser(peer: peer, serviceType: serviceType, port: 9)
      defer { advertiser.stop() }
      let browser = try Browser(serviceType: serviceType)
      defer { browser.stop() }
      let started = ContinuousClock.now
      let published = try await advertiser.start()
      let seen = await withTaskGroup(of: [DiscoveredAddress]?.self) { group in
        group.addTask {
          do {
            for try await event in browser.events {
              if case .found(let found) = event, found.name == published { return found.addresses }
            }
          } catch {}
          return nil
        }
        group.addTask {
          try? await Task.sleep(for: .seconds(5))
          browser.stop()
          return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        browser.stop()
        return first
      }
      guard let seen else {
        return (
          .problem(
            "advertisement",
            "published '\(published)' but did not see it come back within 5 s",
            fix: "avahi-daemon may have no interface to use (see interfaces); "
              + "'avahi-browse -art' should list _\(serviceType.name)._tcp services"), []
        )
      }
      let elapsed = ContinuousClock.now - started
      return (
        .ok(
          "advertisement",
          "published '\(published)' and saw it come back in "
            + String(format: "%.2f", elapsed.inSeconds) + " s"), seen
      )
    } catch {
      return (
        .problem(
          "advertisement", "cannot publish: \(error)",
          fix: "see the avahi check; another service may hold the name"), []
      )
    }
  }
}
