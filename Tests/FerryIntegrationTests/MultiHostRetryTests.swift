import Foundation
import Testing

/// `ferry send --retry-for` across namespace hosts, the data's way (host a's egress) shaped to
/// 200 Mbit with tc tbf (no netem on this kernel): host b's cable pulled, its receiver stopped,
/// 2 % of its incoming packets dropped. Only the test namespaces are touched, and each test
/// clears what an earlier, failed one may have left (the harness deletes the namespaces after).

@Suite(
  "Retries across namespace hosts", .timeLimit(.minutes(3)), .needsToRunOnHostA, .serialized,
  .endsItsProcesses)
struct MultiHostRetryTests {
  /// Runs `ip ARGS` (or `tc`, `nft`) inside host b.
  @discardableResult
  func onB(_ arguments: [String]) async throws -> String {
    try await on("b", arguments)
  }

  /// Runs a command inside `host`, expecting it to succeed (unless `mayFail`).
  @discardableResult
  func on(_ host: String, _ arguments: [String], mayFail: Bool = false) async throws -> String {
    let result = try await run(Harness.on!, [host] + arguments)
    if !mayFail { #expect(result.status == 0, "\(arguments): \(result.stderr)") }
    return result.stdout
  }

  /// Back to an unshaped, lossless, connected link: what a failed test may have left behind.
  func clearFaults() async throws {
    try await on("a", ["tc", "qdisc", "del", "dev", "mdns0", "root"], mayFail: true)
    try await on("b", ["nft", "delete", "table", "inet", "ferryloss"], mayFail: true)
    try await onB(["ip", "link", "set", "mdns0", "up"])
  }

  /// Bytes host b's interface has received so far.
  func receivedOnB() async throws -> Int {
    let json = try await onB(["ip", "-s", "-j", "link", "show", "dev", "mdns0"])
    let links = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]]
    let stats = links?.first?["stats64"] as? [String: Any]
    return try #require((stats?["rx"] as? [String: Any])?["bytes"] as? Int, "\(json)")
  }

  /// A send under way from host a to a `ferry receive --yes` on host b, over host b's link
  /// shaped to 200 Mbit (tc tbf): a file of `size` bytes — beside a folder of 60 small files
  /// and a text from standard input, as `batch` says — `--retry-for 60`, started and past
  /// `moved` bytes at the receiver.
  struct Shaped {
    var receiver: ChildProcess
    let sender: ChildProcess
    let file: URL
    /// The folder of small files sent beside the file (nil: the file alone).
    let tree: URL?
    let destination: URL
    /// The bytes of every file the batch holds.
    let bytes: Int
    /// The receiver's identity, name and port: what a restarted receiver needs.
    let home: String
    let label: String
    let port: Int
  }

  /// What a shaped send offers, and how the paths reach `ferry send`.
  enum Batch {
    /// The large file alone.
    case file
    /// The large file and a folder of small files, named on the command line.
    case folder
    /// The same, listed in a `--files-from` file.
    case filesFrom
    /// A text read from standard input (`-` with `--stdin-name`), then the file and the folder.
    case standardInput
  }

  /// A folder of 60 small files in 6 subfolders under `root`, and their bytes.
  func smallFiles(under root: URL) throws -> (URL, Int) {
    let tree = root.appendingPathComponent("tree")
    var bytes = 0
    for index in 0..<60 {
      try writeFile(
        tree.appendingPathComponent("d\(index % 6)/f\(index).txt"), size: 50 * index + 1,
        seed: UInt64(index))
      bytes += 50 * index + 1
    }
    return (tree, bytes)
  }

  /// `ferry receive --yes --json` on host b into `destination`, as `home`, on `port` (0: any).
  func receiver(_ label: String, destination: URL, home: String, port: Int = 0) async throws
    -> ReceiverProcess
  {
    try await ReceiverProcess.start(
      ["--yes", "--json", "--dir", destination.path, "--name", label, "--port", "\(port)"],
      bus: .harness, on: "b", home: home)
  }

  func shapedSend(_ label: String, size: Int, moved: Int, batch: Batch = .folder) async throws
    -> Shaped
  {
    // The file's data leaves host a: its egress is what limits the transfer.
    try await on(
      "a",
      [
        "tc", "qdisc", "replace", "dev", "mdns0", "root", "tbf", "rate", "200mbit", "burst",
        "256kb", "latency", "100ms",
      ])
    let destination = try temporaryDirectory("\(label)-dst")
    let home = Harness.freshFerryHome()
    let started = try await receiver(label, destination: destination, home: home)
    let (receiver, port) = (started.process, started.port)
    let source = try temporaryDirectory("\(label)-src")
    let file = source.appendingPathComponent("big.bin")
    try writeFile(file, size: size, seed: UInt64(size))
    var tree: URL?
    var bytes = size
    if batch != .file {
      let (folder, small) = try smallFiles(under: source)
      (tree, bytes) = (folder, size + small)
    }
    let address = try #require(Harness.hostAddresses["b"])
    var arguments = ["send", "--json", "--address", "\(address):\(port)", "--retry-for", "60"]
    var stdin = "/dev/null"
    switch batch {
    case .file: arguments.append(file.path)
    case .folder: arguments += [file.path, tree!.path]
    case .filesFrom:
      let list = source.appendingPathComponent("list.txt")
      try Data("\(file.path)\n\(tree!.path)\n".utf8).write(to: list)
      arguments += ["--files-from", list.path]
    case .standardInput:
      let note = source.appendingPathComponent("note.txt")
      try Data("the text that came first\n".utf8).write(to: note)
      stdin = note.path
      bytes += 25
      arguments += ["--stdin-name", "note.txt", "-", file.path, tree!.path]
    }
    let sender = try ChildProcess.ferry(
      arguments, environment: ["FERRY_HOME": Harness.freshFerryHome()], stdin: stdin)
    let moving = await receiver.waitForLine {
      $0.contains("\"progress\"") && (jsonObject($0)?["bytes"] as? Int ?? 0) > moved
    }
    if moving == nil {
      Issue.record("no progress: \(receiver.stderr) \(sender.stderr)")
    }
    return Shaped(
      receiver: receiver, sender: sender, file: file, tree: tree, destination: destination,
      bytes: bytes, home: home, label: label, port: port)
  }

  /// Ends a shaped send: stops both processes (also called from a `defer`, so synchronous).
  func stop(_ send: Shaped) {
    send.receiver.signal(SIGCONT)
    send.receiver.signal(SIGKILL)
    send.sender.signal(SIGKILL)
  }

  /// The sender exited 0 after at least one retry, and every file arrived byte-identical.
  func expectDelivered(_ send: Shaped) async throws {
    #expect(await send.sender.waitForExit(timeout: .seconds(120)) == 0, "\(send.sender.stderr)")
    let events = send.sender.stdoutLines.compactMap { jsonObject($0.text) }
    #expect(events.contains { $0["event"] as? String == "retrying" }, "\(send.sender.stdout)")
    #expect(events.contains { $0["event"] as? String == "resumed" }, "\(send.sender.stdout)")
    #expect(
      try sha256(of: send.destination.appendingPathComponent("big.bin")) == sha256(of: send.file))
    if let tree = send.tree {
      for index in 0..<60 {
        let path = "d\(index % 6)/f\(index).txt"
        #expect(
          try sha256(of: send.destination.appendingPathComponent("tree/\(path)"))
            == sha256(of: tree.appendingPathComponent(path)), "\(path)")
      }
    }
  }

  /// What crossed host b's link since `before`, against the batch's bytes: a cut batch resumes
  /// from what the receiver staged, so at most a tenth more than the data crosses (what was in
  /// flight when the link went, TLS and frames).
  func expectResumed(_ send: Shaped, since before: Int, _ fault: String) async throws {
    try await clearFaults()
    let crossed = try await receivedOnB() - before
    print("\(fault): \(crossed) bytes crossed host b's link for \(send.bytes)")
    #expect(crossed <= send.bytes * 11 / 10, "\(crossed) bytes for \(send.bytes)")
  }

  @Test(
    "a 10 s outage in the middle of 200 MB and a folder at 200 Mbit: send reconnects and resumes by itself, exit 0, under 1.1x the data on the wire"
  )
  func outage() async throws {
    try await clearFaults()
    let before = try await receivedOnB()
    let send = try await shapedSend("outage", size: 200 << 20, moved: 40 << 20)
    defer { stop(send) }
    try await onB(["ip", "link", "set", "mdns0", "down"])
    try await Task.sleep(for: .seconds(10))
    try await onB(["ip", "link", "set", "mdns0", "up"])
    try await expectDelivered(send)
    try await expectResumed(send, since: before, "outage")
  }

  @Test(
    "the receiver stopped (SIGSTOP) for 20 s in a --files-from batch: send gives up on the dead link, reconnects once it wakes, resumes, exit 0"
  )
  func receiverStopped() async throws {
    try await clearFaults()
    let before = try await receivedOnB()
    let send = try await shapedSend("sleepy", size: 100 << 20, moved: 20 << 20, batch: .filesFrom)
    defer { stop(send) }
    send.receiver.signal(SIGSTOP)
    try await Task.sleep(for: .seconds(20))
    send.receiver.signal(SIGCONT)
    try await expectDelivered(send)
    try await expectResumed(send, since: before, "stopped")
  }

  @Test(
    "the receiver killed (SIGKILL) mid-batch (standard input, 200 MB, a folder) and started again 3 s later on the same port and folder: send resumes, exit 0, under 1.1x the data",
    arguments: [Batch.folder, .standardInput])
  func receiverKilled(batch: Batch) async throws {
    try await clearFaults()
    let before = try await receivedOnB()
    var send = try await shapedSend("killed", size: 200 << 20, moved: 40 << 20, batch: batch)
    defer { stop(send) }
    send.receiver.signal(SIGKILL)
    _ = await send.receiver.waitForExit()
    try await Task.sleep(for: .seconds(3))
    send.receiver = try await receiver(
      send.label, destination: send.destination, home: send.home, port: send.port
    ).process
    let restarted = send.receiver
    defer { restarted.signal(SIGKILL) }
    try await expectDelivered(send)
    // Nothing was left staged, and no second copy was made.
    let names = try FileManager.default.contentsOfDirectory(atPath: send.destination.path)
    let expected = batch == .standardInput ? ["big.bin", "note.txt", "tree"] : ["big.bin", "tree"]
    #expect(names.filter { $0 != ".ferry-partial" }.sorted() == expected, "\(names)")
    let staging = send.destination.appendingPathComponent(".ferry-partial").path
    let left = (try? FileManager.default.contentsOfDirectory(atPath: staging)) ?? []
    #expect(left.isEmpty, "left staged: \(left)")
    if batch == .standardInput {
      #expect(
        try String(contentsOf: send.destination.appendingPathComponent("note.txt"), encoding: .utf8)
          == "the text that came first\n")
    }
    try await expectResumed(send, since: before, "killed")
  }

  @Test("2 % of packets into host b dropped at 200 Mbit (nftables): 200 MB arrive intact, exit 0")
  func loss() async throws {
    let size = 200 << 20
    try await clearFaults()
    // Host b's own table, in its own namespace: nothing outside it is touched.
    try await onB(["nft", "add", "table", "inet", "ferryloss"])
    try await onB(
      [
        "nft", "add", "chain", "inet", "ferryloss", "in",
        "{ type filter hook input priority 0; policy accept; }",
      ])
    try await onB(
      [
        "nft", "add", "rule", "inet", "ferryloss", "in", "meta", "l4proto", "tcp", "numgen",
        "random", "mod", "100", "<", "2", "drop",
      ])
    let before = try await receivedOnB()
    let send = try await shapedSend("lossy", size: size, moved: 0, batch: .file)
    defer { stop(send) }
    #expect(await send.sender.waitForExit(timeout: .seconds(150)) == 0, "\(send.sender.stderr)")
    #expect(
      try sha256(of: send.destination.appendingPathComponent("big.bin")) == sha256(of: send.file))
    try await clearFaults()
    let crossed = try await receivedOnB() - before
    print("loss: \(crossed) bytes crossed host b's link for \(size)")
    #expect(crossed <= size * 13 / 10, "\(crossed) bytes for \(size)")
  }

  @Test(
    "host b's link cut: send --to gives up in seconds (exit 3); browse says gone, then found again"
  )
  func linkCut() async throws {
    try await clearFaults()
    let type = Harness.uniqueServiceType()
    let b = try await MultiHostTests().startReceiver(on: "b", name: "cut-b", type: type)
    defer { b.process.signal(SIGKILL) }
    let browse = try ChildProcess.ferry(["browse", "--service", type, "--json"], on: "a")
    defer { browse.signal(SIGKILL) }
    _ = try #require(
      await browse.waitForLine {
        $0.contains("\"peer-found\"") && jsonObject($0)?["name"] as? String == "cut-b"
      }, "\(browse.stderr)")
    _ = try await onB(["ip", "link", "set", "mdns0", "down"])
    let cut = ContinuousClock.now
    // Still listed by host a's avahi-daemon (its records live minutes), but given up on at once.
    let file = try temporaryDirectory("cut-src").appendingPathComponent("a.txt")
    try writeFile(file, size: 10)
    let send = try ChildProcess.ferry(
      ["send", "--to", "cut-b", "--service", type, file.path], on: "a",
      environment: ["FERRY_HOME": Harness.freshFerryHome()])
    defer { send.signal(SIGKILL) }
    #expect(await send.waitForExit() == 3, "\(send.stderr)")
    #expect(send.stderr.contains("does not answer"), "\(send.stderr)")
    print("link cut: send gave up after \(seconds(ContinuousClock.now - cut)) s")
    // Delivery.answerTimeout: 3 s for a connect at its addresses; the start-up through `on` is
    // the machine's.
    #expect(ContinuousClock.now - cut < .seconds(3) + Harness.margin)
    let gone = await browse.waitForLine {
      $0.contains("\"peer-lost\"") && jsonObject($0)?["reason"] as? String == "unreachable"
    }
    let line = try #require(gone, "no peer-lost: \(browse.stdout)")
    print("link cut: browse said gone after \(seconds(line.time - cut)) s")
    // BrowseProbe: gone after 2 failed tries in a row; a try starts 2 s after the last one
    // ended (the one before the cut may have ended just then, after its 2 s) and takes 2 s to
    // fail: within 10 s of the cut.
    #expect(line.time - cut < .seconds(2 + 2 * (2 + 2)) + Harness.margin)

    _ = try await onB(["ip", "link", "set", "mdns0", "up"])
    let back = ContinuousClock.now
    let foundLines = {
      browse.stdoutLines.filter {
        $0.text.contains("\"peer-found\"") && jsonObject($0.text)?["name"] as? String == "cut-b"
      }
    }
    let again = await browse.waitForLine { _ in foundLines().count >= 2 }
    #expect(again != nil, "not found again: \(browse.stdout)")
    if let found = foundLines().last {
      print("link back: browse found it again after \(seconds(found.time - back)) s")
    }
  }
}
