import Glibc
import Synchronization

/// A destination folder kept open (its descriptor closed when the last user lets go of it):
/// files placed one after the other, on any thread, reuse it rather than walk to it again.
final class OpenFolder: Sendable {
  /// Its path under the destination, one name per component.
  let components: [String]
  /// Its descriptor.
  let fd: Int32

  init(components: [String], fd: Int32) {
    self.components = components
    self.fd = fd
  }

  deinit { close(fd) }
}

/// The few destination folders files were last placed in (``StagingArea/place(_:at:policy:)``),
/// most recent first, at most `capacity`: a walked tree's files come folder by folder, and
/// files of one folder may be placed on two threads at once. Any thread.
final class OpenFolders: Sendable {
  private let capacity: Int
  private let folders = Mutex<[OpenFolder]>([])

  init(capacity: Int) {
    self.capacity = max(1, capacity)
  }

  /// The open folder at `components`, if it is kept.
  func find(_ components: [String]) -> OpenFolder? {
    folders.withLock { folders in folders.first { $0.components == components } }
  }

  /// Keeps `folder`, first; the least recently kept goes once there are more than `capacity`
  /// (closed when whoever still uses it is done).
  func keep(_ folder: OpenFolder) {
    let dropped = folders.withLock { folders -> [OpenFolder] in
      folders.removeAll { $0.components == folder.components }
      folders.insert(folder, at: 0)
      guard folders.count > capacity else { return [] }
      defer { folders.removeLast(folders.count - capacity) }
      return Array(folders[capacity...])
    }
    _ = dropped  // released here, outside the lock
  }
}
