import Ferry
import Foundation
import Testing

/// Discovery across simulated hosts (network namespaces on a bridge, each with its own
/// avahi-daemon), from scripts/harness/hosts.sh.
@Suite(
  "Discovery across namespace hosts", .timeLimit(.minutes(3)), .needsHosts, .serialized,
  .endsItsProcesses)
struct MultiHostTests {
  /// Starts `ferry receive --json` on `host` and returns it with its `advertising` event.
  func startReceiver(on host: String, name: String, type: String) async throws -> (
    process: ChildProcess, advertising: [String: Any], advertisedAt: ContinuousClock.Instant
  ) {
    let receiver = try await ReceiverProcess.start(
      ["--yes", "--dir", NSTemporaryDirectory(), "--service", type, "--name", name, "--json"],
      bus: .harness, on: host, home: Harness.testFerryHome)
    return (receiver.process, receiver.advertising?.fields ?? [:], receiver.readyAt)
  }

  @Test(
    "a Browser on host a finds an Advertiser on host b with b's addresses, and loses it",
    .needsToRunOnHostA)
  func browserFindsOtherHost() async throws {
    let type = Harness.uniqueServiceType()
    let name = "bob-\(Int.random(in: 1000...9999))"
    let addressOfB = try #require(Harness.hostAddresses["b"])
    let browser = try Browser(serviceType: try ServiceType(type))
    defer { browser.stop() }
    let events = EventRecorder(browser.events)

    let spawned = ContinuousClock.now
    let (receiver, advertising, advertisedAt) = try await startReceiver(
      on: "b", name: name, type: type)
    let found = try #require(
      await events.first { $0.isFound(name) }, "not found: \(events.all.map(\.element))")
    let sinceSpawn = found.record.time - spawned
    let sinceReady = found.record.time - advertisedAt
    print(
      "host a found \(name) on host b \(seconds(sinceSpawn)) s after starting ferry receive, "
        + "\(seconds(sinceReady)) s after it reported advertising")
    // Measured from its readiness: ferry's start-up is the machine's, no promise of discovery's.
    #expect(sinceReady < Harness.margin, "discovery took \(sinceReady) after advertising")

    let peer = found.record.element.peer
    #expect(peer.addresses.contains { $0.ip == addressOfB && $0.interface == "mdns0" })
    #expect(peer.peerID?.fingerprint.hexString == advertising["fingerprint"] as? String)
    #expect(Int(peer.port) == advertising["port"] as? Int)
    #expect(peer.hostName == "hostb.local")

    // Seen over IPv4 and IPv6: still one peer, with both addresses.
    let both = await events.first {
      $0.peer.name == name && $0.peer.addresses.contains { $0.family == .ipv6 }
        && $0.peer.addresses.contains { $0.family == .ipv4 }
    }
    #expect(both != nil, "never saw both address families: \(events.all.map(\.element))")
    #expect(browser.peers.filter { $0.name == name }.count == 1)
    #expect(events.all.filter { $0.element.isFound(name) }.count == 1)

    let stoppedAt = ContinuousClock.now
    receiver.signal(SIGINT)
    let status = await receiver.waitForExit()
    #expect(status == 130, "stderr: \(receiver.stderr)")
    let lost = try #require(await events.first(after: found.index) { $0.isLost(name) })
    print("host a lost \(name) \(seconds(lost.record.time - stoppedAt)) s after SIGINT on host b")
    // A goodbye at its exit, whose records the daemon keeps 1 s more (RFC 6762 10.1).
    #expect(lost.record.time - stoppedAt < .seconds(1) + Harness.margin)
  }

  @Test("ferry browse --json on host a follows receivers on hosts b and c")
  func browseJSONAcrossHosts() async throws {
    let type = Harness.uniqueServiceType()
    let browse = try ChildProcess.ferry(["browse", "--service", type, "--json"], on: "a")
    let b = try await startReceiver(on: "b", name: "peer-b", type: type)
    let c = try await startReceiver(on: "c", name: "peer-c", type: type)
    defer { b.process.signal(SIGKILL) }

    for (host, name, advertising) in [
      ("b", "peer-b", b.advertising), ("c", "peer-c", c.advertising),
    ] {
      let line = await browse.waitForLine {
        $0.contains("\"peer-found\"") && jsonObject($0)?["name"] as? String == name
      }
      let event = try #require(line.flatMap { jsonObject($0.text) }, "\(browse.stderr)")
      #expect(event["fingerprint"] as? String == advertising["fingerprint"] as? String)
      #expect(event["port"] as? Int == advertising["port"] as? Int)
      #expect(event["host"] as? String == "host\(host).local")
      let addresses = try #require(event["addresses"] as? [[String: Any]])
      #expect(addresses.contains { $0["ip"] as? String == Harness.hostAddresses[host] })
    }

    c.process.signal(SIGTERM)
    let status = await c.process.waitForExit()
    #expect(status == 130, "stderr: \(c.process.stderr)")
    let lost = await browse.waitForLine {
      $0.contains("\"peer-lost\"") && jsonObject($0)?["name"] as? String == "peer-c"
    }
    #expect(lost != nil, "no peer-lost for peer-c: \(browse.stdout)")

    browse.signal(SIGINT)
    #expect(await browse.waitForExit() == 130)
    #expect(!browse.stdout.contains("peer-lost\",\"timestamp\":\"\",\"name\":\"peer-b\""))
    for line in browse.stdoutLines {
      let event = jsonObject(line.text)
      #expect(event != nil, "not a JSON object: \(line.text)")
      #expect(
        ["peer-found", "peer-updated", "peer-lost"].contains(event?["event"] as? String ?? ""))
    }
  }

  @Test("the same name on two hosts: the later one takes Avahi's alternative name")
  func collisionAcrossHosts() async throws {
    let type = Harness.uniqueServiceType()
    let name = "same-\(Int.random(in: 1000...9999))"
    let first = try await startReceiver(on: "b", name: name, type: type)
    defer { first.process.signal(SIGKILL) }
    let second = try await startReceiver(on: "c", name: name, type: type)
    defer { second.process.signal(SIGKILL) }
    #expect(first.advertising["name"] as? String == name)
    #expect(second.advertising["name"] as? String == "\(name) #2")
    let renamed = second.process.stdoutLines.compactMap { jsonObject($0.text) }.first {
      $0["event"] as? String == "renamed"
    }
    #expect(renamed?["to"] as? String == "\(name) #2")

    // Browsing until both are listed, not for a set time.
    let browse = try ChildProcess.ferry(["browse", "--service", type, "--json"], on: "a")
    for listed in [name, "\(name) #2"] {
      let line = await browse.waitForLine {
        $0.contains("\"peer-found\"") && jsonObject($0)?["name"] as? String == listed
      }
      #expect(line != nil, "\(listed) not listed: \(browse.stdout)\(browse.stderr)")
    }
    browse.signal(SIGINT)
    #expect(await browse.waitForExit() == 130, "\(browse.stderr)")
    let names = Set(browse.stdoutLines.compactMap { jsonObject($0.text)?["name"] as? String })
    #expect(names == [name, "\(name) #2"])
  }
}
