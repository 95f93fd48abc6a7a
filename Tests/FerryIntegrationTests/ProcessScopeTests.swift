import Foundation
import Testing

/// The harness's promise that a test leaves no process behind, however it ends.
@Suite("A test's processes end with it", .timeLimit(.minutes(1)), .endsItsProcesses)
struct ProcessScopeTests {
  /// Whether process `pid` exists and is not a zombie.
  func alive(_ pid: pid_t) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let close = stat.lastIndex(of: ")")
    else { return false }
    return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first != "Z"
  }

  @Test("a scope's end kills what is still running, and what it started in turn")
  func endsGroup() async throws {
    let scope = ProcessScope()
    // A shell that starts a grandchild and waits: the way a wrapper script leaves a server.
    let parent = try ProcessScope.$current.withValue(scope) {
      try ChildProcess("/bin/sh", ["-c", "sleep 600 & echo $!; wait"])
    }
    let line = try #require(await parent.waitForLine { Int32($0) != nil }, "\(parent.stderr)")
    let grandchild = try #require(Int32(line.text))
    #expect(alive(parent.pid) && alive(grandchild))
    let ended = await scope.end()
    #expect(ended.count == 1, "\(ended)")
    #expect(!alive(parent.pid))
    // The grandchild is init's to reap once orphaned: wait for it to go.
    let deadline = ContinuousClock.now + .seconds(10)
    while alive(grandchild), ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(20))
    }
    #expect(!alive(grandchild), "the grandchild \(grandchild) outlived its group")
  }

  @Test("a process the test ended itself is not reported, nor signalled again")
  func endedByTest() async throws {
    let scope = ProcessScope()
    let child = try ProcessScope.$current.withValue(scope) {
      try ChildProcess("/bin/sh", ["-c", "exit 3"])
    }
    #expect(await child.waitForExit() == 3)
    #expect(await scope.end().isEmpty)
  }
}
