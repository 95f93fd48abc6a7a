import Foundation
import Synchronization
import Testing

/// The processes one test started, ended when the test ends — passed, failed or stopped by a
/// thrown error — each with its process group (what it started in turn), so that no receiver a
/// failed test started keeps listening after it.
///
/// Every suite that starts processes carries ``Trait/endsItsProcesses``; a ``ChildProcess``
/// started outside such a test is an issue of its own (the suite lacks the trait), and is
/// still ended when the test process exits.
final class ProcessScope: Sendable {
  /// The scope of the test running on this task (and the tasks it starts).
  @TaskLocal static var current: ProcessScope?

  /// The processes started outside any test's scope: ended when this test process exits.
  static let unscoped = ProcessScope()

  private let started = Mutex<[ChildProcess]>([])

  /// Takes `child` into the scope of the test under way (or ``unscoped``, reported).
  static func adopt(_ child: ChildProcess) {
    if let current {
      current.started.withLock { $0.append(child) }
      return
    }
    unscoped.started.withLock { $0.append(child) }
    endUnscopedAtExit
    let command = child.arguments.joined(separator: " ")
    Issue.record(
      Comment(
        rawValue: "\(command) was started outside a test that ends its processes: give its "
          + "suite the .endsItsProcesses trait"))
  }

  /// Kills every process of the scope that is still running, and its process group, and
  /// collects its exit status; returns the command lines of those it had to end.
  @discardableResult
  func end() async -> [String] {
    let children = started.withLock { children in
      defer { children = [] }
      return children
    }
    var ended: [String] = []
    for child in children where child.endGroup() {
      ended.append(child.arguments.joined(separator: " "))
    }
    for child in children { _ = await child.waitForExit(timeout: .seconds(5)) }
    return ended
  }

  /// Ends the unscoped processes when this process exits (registered once, on first use).
  private static let endUnscopedAtExit: Void = {
    atexit {
      for child in ProcessScope.unscoped.started.withLock({ $0 }) { _ = child.endGroup() }
    }
  }()
}

/// Gives each test of a suite a ``ProcessScope``: what the test started is ended when it ends.
struct EndsItsProcessesTrait: TestTrait, SuiteTrait, TestScoping {
  var isRecursive: Bool { true }

  func provideScope(
    for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
  ) async throws {
    // Suites, and a parameterized test as a whole, have no processes of their own: each test
    // case gets its scope.
    guard testCase != nil else { return try await function() }
    let scope = ProcessScope()
    do {
      try await ProcessScope.$current.withValue(scope) { try await function() }
    } catch {
      await scope.end()
      throw error
    }
    await scope.end()
  }
}

extension Trait where Self == EndsItsProcessesTrait {
  /// Every process a test of the suite starts is ended (with its process group) when the test
  /// ends, whether it passed or failed.
  static var endsItsProcesses: Self { Self() }
}
