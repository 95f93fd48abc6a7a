import CFerrySystem

/// How a long-running Ferry process asks glibc's allocator to give memory back: buffers of
/// 256 KiB and more (a gathered request body, a file's pieces) are mappings of their own,
/// returned to the system when freed, and two arenas serve every thread. Without it, a peak of
/// such buffers (64 connections each sending a JSON body at once, say) stays in the process's
/// resident memory for good. Called once, first thing, on the main thread.
package enum AllocatorTuning {
  /// Tunes the allocator; whether glibc took it.
  @discardableResult
  package static func apply() -> Bool {
    ferry_tune_allocator() == 1
  }

  /// Gives the memory freed since back to the system (malloc_trim(3)): for a process that
  /// stays up idle after a burst of work (a daemon after a transfer). Takes a few
  /// milliseconds; any thread.
  package static func trim() {
    _ = ferry_trim_allocator()
  }
}
