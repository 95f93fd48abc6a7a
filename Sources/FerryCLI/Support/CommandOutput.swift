#if canImport(Glibc)
  import Glibc
#endif

/// Runs a helper program (`nft`, `iptables`, `dbus-send`) and reads what it prints, with
/// posix_spawn and a pipe: Foundation's `Process` needs a loopback socket pair, which a
/// firewall dropping loopback traffic (the very thing `ferry doctor` looks for) blocks.
enum CommandOutput {
  /// The standard output of `path` with `arguments` (stderr discarded), nil if it cannot
  /// start, exits non-zero, prints more than 4 MiB or takes longer than `timeout` (it is then
  /// killed).
  static func of(
    _ path: String, _ arguments: [String], timeout: Duration = .seconds(5)
  ) -> String? {
    var pipe: [Int32] = [-1, -1]
    guard Glibc.pipe(&pipe) == 0 else { return nil }
    // Not inherited by other children this process spawns meanwhile.
    _ = fcntl(pipe[0], F_SETFD, FD_CLOEXEC)
    _ = fcntl(pipe[1], F_SETFD, FD_CLOEXEC)
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { for argument in argv { free(argument) } }
    // The child starts with default signal handling (this process ignores SIGPIPE).
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var defaults = sigset_t()
    sigemptyset(&defaults)
    sigaddset(&defaults, SIGPIPE)
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, environ)
    close(pipe[1])
    defer { close(pipe[0]) }
    guard spawned == 0 else { return nil }
    var output: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 64 << 10)
    let deadline = ContinuousClock.now + timeout
    var failed = false
    while true {
      let left = deadline - ContinuousClock.now
      guard left > .zero else {
        failed = true
        break
      }
      var descriptor = pollfd(fd: pipe[0], events: Int16(POLLIN), revents: 0)
      let milliseconds = Int32(min(left.components.seconds * 1000 + 1, 1000))
      let ready = poll(&descriptor, 1, milliseconds)
      if ready < 0 && errno == EINTR { continue }
      if ready < 0 {
        failed = true
        break
      }
      if ready == 0 { continue }
      let count = buffer.withUnsafeMutableBytes { read(pipe[0], $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      if count <= 0 { break }
      output += buffer.prefix(count)
      if output.count > 4 << 20 {
        failed = true
        break
      }
    }
    if failed { kill(pid, SIGKILL) }
    // A child that closed its output but goes on is killed at the deadline too.
    var status: Int32 = 0
    while true {
      let reaped = waitpid(pid, &status, WNOHANG)
      if reaped == pid || (reaped < 0 && errno != EINTR) { break }
      if ContinuousClock.now > deadline && !failed {
        failed = true
        kill(pid, SIGKILL)
      }
      usleep(10_000)
    }
    // Exited (not signalled) with status 0.
    guard !failed, status & 0x7F == 0, (status >> 8) & 0xFF == 0 else { return nil }
    return String(decoding: output, as: UTF8.self)
  }
}
