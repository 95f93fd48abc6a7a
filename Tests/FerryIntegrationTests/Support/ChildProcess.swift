import Foundation
import Synchronization

/// A process started by a test, with its output collected line by line (with the time each line
/// arrived) so that tests can wait for a line, measure latencies, and stop it by PID.
///
/// Spawned with posix_spawn rather than Foundation's `Process`: the child gets an empty signal
/// mask and default dispositions (Swift's executor threads block SIGINT and SIGTERM, and a child
/// would inherit that), and its pipes are close-on-exec so that they do not leak into siblings.
/// Each child leads a process group of its own (a terminal's child, a session), and belongs to
/// the test that started it (``ProcessScope``): whatever the test's end, the group is ended
/// with it.
final class ChildProcess: Sendable {
  /// One line of output and when it was read.
  struct Line: Sendable {
    let text: String
    let time: ContinuousClock.Instant
  }

  let arguments: [String]
  let started: ContinuousClock.Instant
  /// The PID.
  let pid: pid_t
  /// The pseudo-terminal's controlling side, for a child started with `terminal: true`.
  private let terminal: Int32?
  private let state = Mutex(State())

  private struct State {
    /// Everything written to stdout (the terminal), including a line still being typed.
    var transcript = ""
    var stdout: [Line] = []
    var stderr: [Line] = []
    var stdoutClosed = false
    var stderrClosed = false
    var exitStatus: Int32?
  }

  /// Starts `executable` with `arguments`; `environment` entries are added to this process's.
  /// Standard input is `stdin` (a file path) or /dev/null. With `terminal`, standard input,
  /// output and error are instead one pseudo-terminal, in a session of its own — what a
  /// person at a terminal gives a program; ``type(_:)`` types into it and its output is read
  /// as stdout; the terminal is `columns` wide.
  init(
    _ executable: String, _ arguments: [String], environment: [String: String] = [:],
    stdin: String = "/dev/null", terminal: Bool = false, columns: UInt16 = 80
  ) throws {
    self.arguments = [executable] + arguments
    let outPipe: (read: Int32, write: Int32)
    let errPipe: (read: Int32, write: Int32)
    let input: Int32
    if terminal {
      let (master, slave) = try openPseudoTerminal(columns: columns)
      outPipe = (master, slave)
      errPipe = (fcntl(master, F_DUPFD_CLOEXEC, 0), fcntl(slave, F_DUPFD_CLOEXEC, 0))
      input = fcntl(slave, F_DUPFD_CLOEXEC, 0)
      self.terminal = master
    } else {
      outPipe = try makePipe()
      errPipe = try makePipe()
      input = open(stdin, O_RDONLY | O_CLOEXEC)
      self.terminal = nil
    }
    guard input >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    defer {
      close(input)
      close(outPipe.write)
      close(errPipe.write)
    }

    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, input, 0)
    posix_spawn_file_actions_adddup2(&actions, outPipe.write, 1)
    posix_spawn_file_actions_adddup2(&actions, errPipe.write, 2)

    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var emptyMask = sigset_t()
    sigemptyset(&emptyMask)
    posix_spawnattr_setsigmask(&attributes, &emptyMask)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGQUIT] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    // A group of its own, so that what it starts is ended with it (a new session is one).
    posix_spawnattr_setpgroup(&attributes, 0)
    posix_spawnattr_setflags(
      &attributes,
      Int16(
        POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
          | (terminal ? spawnSetSID : POSIX_SPAWN_SETPGROUP)))

    var env = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    // Never touch the real ~/.config/ferry: children share this test run's own home.
    if env["FERRY_HOME"] == nil { env["FERRY_HOME"] = Harness.testFerryHome }
    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer {
      for pointer in argv + envp { free(pointer) }
    }
    var pid: pid_t = 0
    let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
    guard result == 0 else {
      close(outPipe.read)
      close(errPipe.read)
      throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO)
    }
    self.pid = pid
    self.started = .now
    ProcessScope.adopt(self)
    if terminal {
      // One terminal: read it once, as stdout (the duplicate is not needed for reading).
      close(errPipe.read)
      state.withLock { $0.stderrClosed = true }
      Self.pump(fcntl(outPipe.read, F_DUPFD_CLOEXEC, 0), into: self, isError: false)
    } else {
      Self.pump(outPipe.read, into: self, isError: false)
      Self.pump(errPipe.read, into: self, isError: true)
    }
  }

  deinit {
    if let terminal { close(terminal) }
  }

  /// Types `text` on the child's terminal (`terminal: true` only).
  func type(_ text: String) {
    guard let terminal else { return }
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
      let written = bytes.withUnsafeBytes { write(terminal, $0.baseAddress, $0.count) }
      if written <= 0 { return }
      bytes = bytes.dropFirst(written)
    }
  }

  /// Everything the child wrote to stdout (its terminal) so far, unfinished line included.
  var transcript: String { state.withLock { $0.transcript } }

  /// Waits until the transcript contains `text`; false on timeout or when output ended first.
  func waitForText(_ text: String, timeout: Duration = Harness.patience) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      let (found, closed) = state.withLock { ($0.transcript.contains(text), $0.stdoutClosed) }
      if found { return true }
      if closed { return false }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return false
  }

  /// Waits until the transcript contains `text` and, after its last occurrence, the question's
  /// prompt "Accept? [y/N]": ferry receive discards what was typed before the prompt shows (it
  /// flushes the terminal's input), so a test types its answer only once this returns true.
  /// False on timeout or when output ended first.
  func waitForQuestion(after text: String, timeout: Duration = Harness.patience) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      let (transcript, closed) = state.withLock { ($0.transcript, $0.stdoutClosed) }
      if let last = transcript.range(of: text, options: .backwards),
        transcript[last.upperBound...].contains("Accept? [y/N]")
      {
        return true
      }
      if closed { return false }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return false
  }

  /// `ferry ARGS`, optionally inside a namespace host through the harness's `on` script.
  static func ferry(
    _ arguments: [String], on host: String? = nil, environment: [String: String] = [:],
    stdin: String = "/dev/null", terminal: Bool = false, columns: UInt16 = 80
  ) throws -> ChildProcess {
    if let host {
      return try ChildProcess(
        Harness.on!, [host, Harness.ferryBinary] + arguments, environment: environment,
        stdin: stdin, terminal: terminal, columns: columns)
    }
    return try ChildProcess(
      Harness.ferryBinary, arguments, environment: environment, stdin: stdin, terminal: terminal,
      columns: columns)
  }

  /// Lines of standard output so far.
  var stdoutLines: [Line] { state.withLock { $0.stdout } }
  /// Lines of standard error so far.
  var stderrLines: [Line] { state.withLock { $0.stderr } }
  /// Standard output so far, as text.
  var stdout: String { stdoutLines.map { $0.text + "\n" }.joined() }
  /// Standard error so far, as text.
  var stderr: String { stderrLines.map { $0.text + "\n" }.joined() }

  /// Waits until a stdout (or stderr) line satisfies `predicate`; returns it, or nil on timeout
  /// or when the stream closed without one.
  func waitForLine(
    onStderr: Bool = false, timeout: Duration = Harness.patience, _ predicate: (String) -> Bool
  ) async -> Line? {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      let (lines, closed) = state.withLock {
        onStderr ? ($0.stderr, $0.stderrClosed) : ($0.stdout, $0.stdoutClosed)
      }
      if let line = lines.first(where: { predicate($0.text) }) { return line }
      if closed { return nil }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return nil
  }

  /// Waits for the NDJSON event `name` on stdout (or stderr) that satisfies `predicate`,
  /// among the lines after the first `skipping`; nil on timeout or when the stream closed
  /// without one.
  func waitForEvent(
    _ name: String, onStderr: Bool = false, skipping: Int = 0, timeout: Duration = Harness.patience,
    where predicate: (Observation) -> Bool = { _ in true }
  ) async -> Observation? {
    let deadline = ContinuousClock.now + timeout
    var next = skipping
    while ContinuousClock.now < deadline {
      let (lines, closed) = state.withLock {
        onStderr ? ($0.stderr, $0.stderrClosed) : ($0.stdout, $0.stdoutClosed)
      }
      while next < lines.count {
        let text = lines[next].text
        next += 1
        guard text.contains("\"\(name)\""), jsonObject(text)?["event"] as? String == name
        else { continue }
        let event = Observation(line: text, time: lines[next - 1].time)
        if predicate(event) { return event }
      }
      if closed { return nil }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return nil
  }

  /// The NDJSON events on stdout (or stderr) so far, `name`d ones only when given.
  func events(_ name: String? = nil, onStderr: Bool = false) -> [Observation] {
    (onStderr ? stderrLines : stdoutLines).compactMap { line in
      guard let event = jsonObject(line.text)?["event"] as? String, name == nil || event == name
      else { return nil }
      return Observation(line: line.text)
    }
  }

  /// Sends a signal to the process, unless it has been reaped.
  func signal(_ number: Int32) {
    if state.withLock({ $0.exitStatus == nil }) { kill(pid, number) }
  }

  /// Whether the process has not exited yet.
  var isRunning: Bool { reap() == nil }

  /// Waits for the process to exit and its output to be read; returns the exit status (128 + N
  /// for a signal), or nil on timeout (the process is then killed).
  func waitForExit(timeout: Duration = Harness.patience) async -> Int32? {
    let deadline = ContinuousClock.now + timeout
    while reap() == nil {
      guard ContinuousClock.now < deadline else {
        kill(pid, SIGKILL)
        return nil
      }
      try? await Task.sleep(for: .milliseconds(20))
    }
    // A grandchild that inherited the pipes may keep them open, so this wait is bounded.
    let drainDeadline = ContinuousClock.now + .seconds(2)
    while !state.withLock({ $0.stdoutClosed && $0.stderrClosed })
      && ContinuousClock.now < drainDeadline
    {
      try? await Task.sleep(for: .milliseconds(10))
    }
    return reap()
  }

  /// Waits for the exit of a process that keeps writing while it works (a transfer reporting
  /// its progress): as long as it takes, as long as it does not fall silent. Returns the exit
  /// status as ``waitForExit(timeout:)`` does, or nil (the process is then killed) once it
  /// wrote nothing for `quiet` — a machine's load slows a transfer, but does not silence it.
  func waitForExit(quietFor quiet: Duration) async -> Int32? {
    var written = -1
    var deadline = ContinuousClock.now + quiet
    while reap() == nil {
      // The transcript holds every byte of stdout (a terminal's child: of both streams, bar
      // redraws too); stderr lines count for a child whose stderr is a pipe.
      let count = state.withLock { $0.transcript.utf8.count + $0.stderr.count }
      if count != written { (written, deadline) = (count, ContinuousClock.now + quiet) }
      guard ContinuousClock.now < deadline else {
        kill(pid, SIGKILL)
        return nil
      }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return await waitForExit()
  }

  /// Stops the process if it still runs (SIGTERM, then SIGKILL).
  func stop() async {
    guard isRunning else { return }
    signal(SIGTERM)
    if await waitForExit(timeout: .seconds(5)) == nil {
      kill(pid, SIGKILL)
      _ = await waitForExit(timeout: .seconds(5))
    }
  }

  /// Kills the process's group (the process and what it started) unless its exit status was
  /// collected: its PID, and so its group's, cannot be another's before that. Returns whether
  /// the process itself was still running. For ``ProcessScope``; tests stop theirs with
  /// ``stop()`` or ``signal(_:)``.
  func endGroup() -> Bool {
    state.withLock { state in
      guard state.exitStatus == nil else { return false }
      let running = Self.isRunning(pid)
      kill(-pid, SIGKILL)
      kill(pid, SIGKILL)
      return running
    }
  }

  /// Whether process `pid` runs (exists and is not a zombie), from /proc/PID/stat.
  private static func isRunning(_ pid: pid_t) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let close = stat.lastIndex(of: ")")
    else { return false }
    return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first != "Z"
  }

  /// Collects the exit status once the process has exited (non-blocking).
  private func reap() -> Int32? {
    state.withLock { state in
      if let status = state.exitStatus { return status }
      var status: Int32 = 0
      guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
      let signal = status & 0x7F
      state.exitStatus = signal == 0 ? (status >> 8) & 0xFF : 128 + signal
      return state.exitStatus
    }
  }

  private static func pump(_ fd: Int32, into child: ChildProcess, isError: Bool) {
    let thread = Thread {
      var pending: [UInt8] = []
      var buffer = [UInt8](repeating: 0, count: 65536)
      while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { break }  // EOF, or EIO from a terminal whose last user is gone
        pending += buffer[0..<count]
        if !isError {
          let text = String(decoding: buffer[0..<count], as: UTF8.self)
          child.state.withLock { $0.transcript += text }
        }
        while let newline = pending.firstIndex(of: 0x0A) {
          let line = Line(text: String(decoding: pending[..<newline], as: UTF8.self), time: .now)
          pending.removeSubrange(...newline)
          child.state.withLock { isError ? $0.stderr.append(line) : $0.stdout.append(line) }
        }
      }
      close(fd)
      child.state.withLock { state in
        if !pending.isEmpty {
          let line = Line(text: String(decoding: pending, as: UTF8.self), time: .now)
          if isError { state.stderr.append(line) } else { state.stdout.append(line) }
        }
        if isError { state.stderrClosed = true } else { state.stdoutClosed = true }
      }
    }
    thread.start()
  }
}

/// glibc's POSIX_SPAWN_SETSID (spawn.h), which the Glibc module does not export.
private let spawnSetSID: Int32 = 0x80

// glibc's pseudo-terminal calls, which the Glibc module does not export (they need _XOPEN_SOURCE).
@_silgen_name("posix_openpt") private func systemOpenPT(_ flags: Int32) -> Int32
@_silgen_name("grantpt") private func systemGrantPT(_ fd: Int32) -> Int32
@_silgen_name("unlockpt") private func systemUnlockPT(_ fd: Int32) -> Int32
@_silgen_name("ptsname_r")
private func systemPTSName(_ fd: Int32, _ buffer: UnsafeMutablePointer<CChar>, _ length: Int)
  -> Int32

/// A new pseudo-terminal of 24 rows and `columns` columns: (controlling side, terminal side),
/// both close-on-exec.
private func openPseudoTerminal(columns: UInt16) throws -> (master: Int32, slave: Int32) {
  let master = systemOpenPT(O_RDWR | O_NOCTTY | O_CLOEXEC)
  var name = [CChar](repeating: 0, count: 128)
  guard master >= 0, systemGrantPT(master) == 0, systemUnlockPT(master) == 0,
    systemPTSName(master, &name, name.count) == 0
  else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
  let path = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  let slave = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
  guard slave >= 0 else {
    close(master)
    throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
  }
  var size = winsize(ws_row: 24, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
  _ = ioctl(master, UInt(TIOCSWINSZ), &size)
  return (master, slave)
}

/// glibc's pipe2(2), which the Glibc module does not export.
@_silgen_name("pipe2")
private func systemPipe2(_ fds: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32

private func makePipe() throws -> (read: Int32, write: Int32) {
  var fds: [Int32] = [0, 0]
  guard systemPipe2(&fds, O_CLOEXEC) == 0 else {
    throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
  }
  return (fds[0], fds[1])
}

/// Runs a command to completion and returns (status, stdout, stderr).
func run(
  _ executable: String, _ arguments: [String], environment: [String: String] = [:],
  timeout: Duration = Harness.patience
) async throws -> (status: Int32, stdout: String, stderr: String) {
  let child = try ChildProcess(executable, arguments, environment: environment)
  let status = await child.waitForExit(timeout: timeout) ?? -1
  return (status, child.stdout, child.stderr)
}

/// Parses one NDJSON line into a dictionary, or nil when it is not a JSON object.
func jsonObject(_ line: String) -> [String: Any]? {
  guard let data = line.data(using: .utf8) else { return nil }
  return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
}

/// Seconds in a duration, for printing.
func seconds(_ duration: Duration) -> Double {
  Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// One NDJSON line a child wrote, kept as its text (so that it is Sendable) and read as a
/// JSON object.
struct Observation: Sendable, CustomStringConvertible {
  let line: String
  /// When it was read.
  var time = ContinuousClock.now

  /// The line's fields (empty if it is not a JSON object).
  var fields: [String: Any] { jsonObject(line) ?? [:] }

  /// One field.
  subscript(_ key: String) -> Any? { fields[key] }

  var description: String { line }
}
