import Foundation
import Testing

/// FerryMultipeer's conformance apps (Conformance/Multipeer) across namespace hosts: each app,
/// written in one of the styles iOS apps use MultipeerConnectivity in, advertises on host b
/// and browses from host a (where this process runs), each host with its own avahi-daemon,
/// over the bridge and real TLS. The browser exits 0 only once 20 messages came back echoed in
/// order, a 1 000 000-byte stream was read whole and a 30 MB resource was moved on host b.
@Suite(
  "FerryMultipeer conformance apps across namespace hosts", .timeLimit(.minutes(3)),
  .needsToRunOnHostA, .serialized, .endsItsProcesses)
struct MultipeerConformanceTests {
  static let apps = [
    "mpc-conformance-stop-browsing",
    "mpc-conformance-lazy-session",
    "mpc-conformance-late-delegates",
    "mpc-conformance-any-thread",
    "mpc-conformance-runloop-streams",
    "mpc-conformance-async",
  ]

  /// The built app `name`, beside `ferry`.
  func binary(_ name: String) -> String {
    URL(fileURLWithPath: Harness.ferryBinary).deletingLastPathComponent()
      .appendingPathComponent(name).path
  }

  @Test(
    "advertising on host b, browsing from host a: connected, 20 messages echoed in order, a 1 MB stream, a 30 MB resource moved into b's folder, both ends exit 0",
    arguments: apps)
  func conformance(_ app: String) async throws {
    let type = Harness.uniqueServiceType("mc")
    let name = "b-conf-\(Int.random(in: 1000...9999))"
    let folder = try temporaryDirectory("mpc-conformance")
    defer { try? FileManager.default.removeItem(at: folder) }
    let advertiser = try ChildProcess(
      Harness.on!, ["b", binary(app), "advertise", type, name, folder.path])
    defer { advertiser.signal(SIGKILL) }
    #expect(
      await advertiser.waitForLine { $0 == "advertising \(name)" } != nil, "\(advertiser.stderr)")

    let browser = try ChildProcess(binary(app), ["browse", type, name])
    defer { browser.signal(SIGKILL) }
    func transcript() -> String {
      "\(app) browser:\n\(browser.stdout)\(browser.stderr)advertiser:\n"
        + "\(advertiser.stdout)\(advertiser.stderr)"
    }
    #expect(await browser.waitForExit(timeout: .seconds(130)) == 0, "\(transcript())")
    let browserLines = browser.stdoutLines.map(\.text)
    for line in [
      "browsing", "found \(name)", "state \(name) connected", "echo 20", "stream 1000000",
      "resource 30000000", "ok",
    ] {
      #expect(browserLines.contains(line), "\(line) missing: \(transcript())")
    }

    // b exits 0 once a left, after the resource.
    #expect(await advertiser.waitForExit() == 0, "\(transcript())")
    let moved = folder.appendingPathComponent("big.bin")
    let advertiserLines = advertiser.stdoutLines.map(\.text)
    for line in [
      "invitation \(name)-browser", "state \(name)-browser connected", "echo 20",
      "stream 1000000", "resource 30000000 \(moved.path)", "done",
    ] {
      #expect(advertiserLines.contains(line), "\(line) missing: \(transcript())")
    }
    let period = Data((0..<256).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
    var expected = Data(capacity: 30_000_000)
    while expected.count < 30_000_000 {
      expected.append(period.prefix(30_000_000 - expected.count))
    }
    #expect(FileManager.default.contents(atPath: moved.path) == expected)
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["big.bin"])
  }
}
