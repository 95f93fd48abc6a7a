import Foundation
import Testing

/// The conventions a user brings from other Unix tools: help and exit 2 for a missing or
/// unknown command, short flags, one default per option in `--help`, hints for scp-style
/// destinations and a folder given without `--dir`, errors in words, a JSON `error` event for
/// a malformed command line.
@Suite("ferry's command-line conventions", .timeLimit(.minutes(2)), .endsItsProcesses)
struct CLIConventionTests {

  @Test("every option in every command's --help has an example: in its help, README or CLI.md")
  func everyOptionHasAnExample() async throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    let documents = try ["README.md", "docs/CLI.md"].map {
      try String(contentsOf: root.appending(path: $0), encoding: .utf8)
    }
    // Lines that run ferry: in a shell block, or quoted in the text.
    let examples = documents.flatMap { $0.split(separator: "\n") }.filter { $0.contains("ferry ") }
    for command in ["send", "receive", "browse", "identity", "peers", "trust", "forget", "doctor"] {
      let help = try await run(Harness.ferryBinary, [command, "--help"]).stdout
      let own =
        help.components(separatedBy: "Examples:").dropFirst().first?
        .components(separatedBy: "USAGE:").first ?? ""
      let options = Set(help.matches(of: /--[a-z][a-z0-9-]+/).map { String($0.output) })
      // The option itself (not a longer one it starts), on a line running this command; the
      // shared --verbose and --version may be shown on any command.
      func shows(_ text: some StringProtocol, _ option: String) -> Bool {
        text.ranges(of: option).contains { range in
          range.upperBound == text.endIndex
            || !(text[range.upperBound].isLetter || text[range.upperBound].isNumber
              || text[range.upperBound] == "-")
        }
      }
      let commandLines = examples.filter {
        $0.contains("ferry \(command)") || $0.contains("ferry -v \(command)")
      }
      for option in options.subtracting(["--help"]).sorted() {
        let lines = ["--verbose", "--version"].contains(option) ? examples : commandLines
        let shown = shows(own, option) || lines.contains { shows($0, option) }
        #expect(shown, "ferry \(command) \(option) has no example")
      }
    }
  }

  @Test("a file the sender cannot read is exit 2 before anything is sent, naming it")
  func unreadableBeforeAsking() async throws {
    // As nobody: root reads every file.
    let folder = try temporaryDirectory("unreadable")
    chmod(folder.path, 0o755)
    let secret = folder.appendingPathComponent("secret.txt")
    try writeFile(secret, size: 10)
    chmod(secret.path, 0o600)
    let home = folder.appendingPathComponent("home")
    try FileManager.default.createDirectory(at: home, withIntermediateDirectories: false)
    chown(home.path, 65_534, 65_534)
    let readable = folder.appendingPathComponent("open.txt")
    try writeFile(readable, size: 10)
    chmod(readable.path, 0o644)
    let result = try await run(
      "/usr/bin/setpriv",
      [
        "--reuid", "65534", "--regid", "65534", "--clear-groups", Harness.ferryBinary, "send",
        "-j", "--address", "127.0.0.1:9", readable.path, secret.path,
      ],
      environment: TestEnvironment.withoutBus(home: home.path))
    #expect(result.status == 2, "\(result.stderr)")
    #expect(
      result.stderr.contains("secret.txt: permission denied"), "\(result.stderr)")
    #expect(!result.stderr.contains("127.0.0.1"), "nothing was connected to: \(result.stderr)")
    #expect(result.stdout.contains("\"cannot-read\""), "\(result.stdout)")
  }

  @Test("unreadable files and folders inside a folder are left out, the rest is sent: exit 7")
  func unreadableInsideFolder() async throws {
    // As nobody: root reads every file.
    let root = try temporaryDirectory("partial")
    chmod(root.path, 0o755)
    let folder = root.appendingPathComponent("tree")
    let open = folder.appendingPathComponent("open.txt")
    let secret = folder.appendingPathComponent("secret.txt")
    let locked = folder.appendingPathComponent("locked")
    try writeFile(open, size: 10)
    try writeFile(secret, size: 10)
    try writeFile(locked.appendingPathComponent("inside.txt"), size: 10)
    chmod(folder.path, 0o755)
    chmod(open.path, 0o644)
    chmod(secret.path, 0o600)
    chmod(locked.path, 0o700)
    let home = root.appendingPathComponent("home")
    try FileManager.default.createDirectory(at: home, withIntermediateDirectories: false)
    chown(home.path, 65_534, 65_534)
    let destination = try temporaryDirectory("partial-dst")
    let started = try await ReceiverProcess.start(
      ["--yes", "--json", "--dir", destination.path, "--name", "partial"], bus: .none)
    let (receiver, port) = (started.process, started.port)
    defer { receiver.signal(SIGKILL) }
    let asNobody = ["--reuid", "65534", "--regid", "65534", "--clear-groups"]
    let result = try await run(
      "/usr/bin/setpriv",
      asNobody + [
        Harness.ferryBinary, "send", "-j", "--address", "127.0.0.1:\(port)", folder.path,
      ],
      environment: TestEnvironment.withoutBus(home: home.path))
    #expect(result.status == 7, "\(result.stderr)")
    let events = result.stdout.split(separator: "\n").compactMap { jsonObject(String($0)) }
    let leftOut = events.filter { $0["event"] as? String == "left-out" }
    let names = Set(leftOut.compactMap { ($0["path"] as? String)?.split(separator: "/").last })
    #expect(names == ["secret.txt", "locked"], "\(leftOut)")
    #expect(leftOut.allSatisfy { $0["unreadable"] as? Bool == true })
    let done = try #require(events.first { $0["event"] as? String == "done" })
    #expect(done["stored"] as? Int == 1, "\(done)")
    #expect(done["unreadable"] as? Int == 2, "\(done)")
    #expect(events.last?["code"] as? String == "unreadable")
    #expect(events.last?["exit"] as? Int == 7)
    #expect(
      result.stderr.contains("secret.txt: unreadable (permission denied)"), "\(result.stderr)")
    #expect(result.stderr.contains("not 2 unreadable paths"), "\(result.stderr)")
    let arrived = destination.appendingPathComponent("tree")
    #expect(FileManager.default.fileExists(atPath: arrived.appendingPathComponent("open.txt").path))
    #expect(
      !FileManager.default.fileExists(atPath: arrived.appendingPathComponent("secret.txt").path))
    #expect(!FileManager.default.fileExists(atPath: arrived.appendingPathComponent("locked").path))

    // Nothing readable at all: nothing to send, exit 2 before anyone is asked, saying why.
    chmod(open.path, 0o600)
    let nothing = try await run(
      "/usr/bin/setpriv",
      asNobody + [Harness.ferryBinary, "send", "--address", "127.0.0.1:\(port)", folder.path],
      environment: TestEnvironment.withoutBus(home: home.path))
    #expect(nothing.status == 2, "\(nothing.stderr)")
    #expect(
      nothing.stderr.contains("nothing to send (left out: 3 unreadable paths)"), "\(nothing.stderr)"
    )
  }

  @Test("'ferry' alone and 'ferry help nonexist' print the help on stderr and exit 2")
  func missingCommand() async throws {
    let alone = try await run(Harness.ferryBinary, [])
    #expect(alone.status == 2)
    #expect(alone.stderr.contains("SUBCOMMANDS:") && alone.stderr.contains("no command given"))
    #expect(alone.stderr.contains("Examples:"), "top-level examples")
    let unknown = try await run(Harness.ferryBinary, ["help", "nonexist"])
    #expect(unknown.status == 2)
    #expect(unknown.stderr.contains("no command 'nonexist'"), "\(unknown.stderr)")
    let known = try await run(Harness.ferryBinary, ["help", "send"])
    #expect(known.status == 0)
  }

  @Test("--help shows each default once, and the short flags")
  func help() async throws {
    let receive = try await run(Harness.ferryBinary, ["receive", "--help"])
    #expect(!receive.stdout.contains("(default: .)"), "\(receive.stdout)")
    #expect(!receive.stdout.contains("(default: 0)"), "\(receive.stdout)")
    for flag in ["-d, --dir", "-y, --yes", "-j, --json", "-q, --quiet"] {
      #expect(receive.stdout.contains(flag), "\(flag)")
    }
    let send = try await run(Harness.ferryBinary, ["send", "--help"])
    #expect(send.stdout.contains("-t, --to"))
  }

  @Test("'ferry receive FOLDER' hints at --dir; a malformed line under -j is an error event")
  func usageHints() async throws {
    let folder = try temporaryDirectory("hint")
    let receive = try await run(
      Harness.ferryBinary, ["receive", "-y", folder.path], environment: TestEnvironment.noBus)
    #expect(receive.status == 2)
    #expect(receive.stderr.contains("'ferry receive --dir FOLDER'"), "\(receive.stderr)")
    let json = try await run(Harness.ferryBinary, ["send", "-j", "--bogus", "x"])
    #expect(json.status == 2)
    let event = try #require(
      jsonObject(json.stdout.split(separator: "\n").first.map(String.init) ?? ""))
    #expect(event["event"] as? String == "error" && event["code"] as? String == "usage", "\(event)")
  }

  @Test("scp habits: 'ferry send FILE user@host' says ferry takes no destination; errors in words")
  func scpHabits() async throws {
    let file = try temporaryDirectory("scp").appendingPathComponent("photo.jpg")
    try writeFile(file, size: 10)
    for destination in ["root@host-b", "host-b:/tmp/", "me@host-b:pictures"] {
      let result = try await run(
        Harness.ferryBinary, ["send", "--address", "127.0.0.1:1", file.path, destination])
      #expect(result.status == 2)
      #expect(result.stderr.contains("ferry takes no destination"), "\(result.stderr)")
      #expect(result.stderr.contains("--to NAME"))
    }
    let missing = try await run(
      Harness.ferryBinary, ["send", "--address", "127.0.0.1:1", "--files-from", "/nonexist/list"])
    #expect(missing.status == 2)
    #expect(
      missing.stderr.contains("cannot read --files-from /nonexist/list: no such file or directory"),
      "\(missing.stderr)")
  }

  @Test(
    "bash completion completes file names, folders for --dir, --on-conflict values, known peers")
  func bashCompletion() async throws {
    let folder = try temporaryDirectory("complete")
    try writeFile(folder.appendingPathComponent("photo.jpg"), size: 1)
    try FileManager.default.createDirectory(
      at: folder.appendingPathComponent("photos"), withIntermediateDirectories: true)
    let home = Harness.freshFerryHome()
    let fingerprint = String(repeating: "7A", count: 32)
    let trusted = try await run(
      Harness.ferryBinary, ["trust", fingerprint, "--name", "Kitchen laptop"],
      environment: ["FERRY_HOME": home])
    #expect(trusted.status == 0, "\(trusted.stderr)")
    let script = folder.appendingPathComponent("ferry.bash")
    let generated = try await run(Harness.ferryBinary, ["--generate-completion-script", "bash"])
    try generated.stdout.write(to: script, atomically: true, encoding: .utf8)
    // What bash does on TAB: the words so far, then the completion function.
    let driver = """
      source '\(script.path)'
      cd '\(folder.path)'
      try() {
        COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
        _ferry ferry "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf '%s|' "${COMPREPLY[@]}"; echo
      }
      try '\(Harness.ferryBinary)' send pho
      try '\(Harness.ferryBinary)' receive --dir pho
      try '\(Harness.ferryBinary)' receive --on-conflict ''
      try '\(Harness.ferryBinary)' send --to Kit
      try '\(Harness.ferryBinary)' forget 7A7A
      """
    let result = try await run("/bin/bash", ["-c", driver], environment: ["FERRY_HOME": home])
    let lines = result.stdout.split(separator: "\n").map(String.init)
    try #require(lines.count == 5, "\(result.stdout)\(result.stderr)")
    #expect(Set(lines[0].split(separator: "|")) == ["photo.jpg", "photos"], "\(lines[0])")
    #expect(lines[1] == "photos|", "folders only: \(lines[1])")
    #expect(lines[2] == "rename|overwrite|skip|", "\(lines[2])")
    // The name itself: readline quotes it as it inserts it (complete -o filenames).
    #expect(lines[3] == "Kitchen laptop|", "\(lines[3])")
    #expect(lines[4] == fingerprint + "|", "\(lines[4])")

    // And what an interactive bash puts on the line: TAB in a pseudo-terminal, then the
    // completed word handed to a function that prints it. Each key is typed once what it
    // answers is on the screen (a prompt, the completion), however long a loaded machine
    // takes: the prompt is "ready> ", which the echo of the line setting it does not show.
    let typist = """
      import os, pty, select, sys, time
      pid, fd = pty.fork()
      if pid == 0:
          os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
      end = time.time() + 50
      def until(marker):
          out = b""
          while marker not in out and time.time() < end:
              if select.select([fd], [], [], 0.1)[0]:
                  try:
                      chunk = os.read(fd, 4096)
                  except OSError:
                      break
                  out += chunk
                  sys.stdout.write(chunk.decode(errors="replace"))
                  sys.stdout.flush()
      line = b"PS1='rea''dy> '; source '%s'; PATH='%s':$PATH\\n"
      os.write(fd, line % (sys.argv[1].encode(), sys.argv[2].encode()))
      until(b"ready> ")
      os.write(fd, b"ferry send --to Kit\\t")
      until(b"laptop")
      os.write(fd, b"\\x01shown() { printf '<%s>' \\"$4\\"; }; shown \\n")
      until(b"<Kitchen laptop>")
      os.write(fd, b"exit\\n")
      """
    let typed = try await run(
      "/usr/bin/python3",
      [
        "-c", typist, script.path,
        URL(fileURLWithPath: Harness.ferryBinary).deletingLastPathComponent().path,
      ],
      environment: ["FERRY_HOME": home])
    #expect(typed.stdout.contains("<Kitchen laptop>"), "\(typed.stdout)")
  }
}
