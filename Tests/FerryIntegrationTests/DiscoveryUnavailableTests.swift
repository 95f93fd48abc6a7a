import Ferry
import Testing

/// Run by scripts/test in a process of its own whose system bus has no avahi-daemon (libdbus
/// reads the bus address once per process).
@Suite(
  "Discovery with no avahi-daemon", .timeLimit(.minutes(3)), .needsNoDaemonProcess,
  .endsItsProcesses)
struct DiscoveryUnavailableTests {
  @Test("the Browser throws discoveryUnavailable with a message that says what to do")
  func browser() throws {
    do {
      _ = try Browser()
      Issue.record("Browser() succeeded with no avahi-daemon")
    } catch {
      guard case .discoveryUnavailable(let reason) = error else {
        Issue.record("expected discoveryUnavailable, got \(error)")
        return
      }
      #expect(reason == "Daemon not running")
      #expect(error.description.contains("avahi-daemon"))
      // The library names no command: the CLI adds its own remedy (CLITests.noBus).
      #expect(!error.description.contains("ferry"))
    }
  }

  @Test("Advertiser.start() throws discoveryUnavailable")
  func advertiser() async throws {
    let advertiser = try Advertiser(peer: testPeer("nodaemon"), port: 1)
    await #expect(throws: DiscoveryError.discoveryUnavailable(reason: "Daemon not running")) {
      try await advertiser.start()
    }
  }
}
