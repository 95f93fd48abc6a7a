import CFerrySystem
import Crypto

/// A running digest of a file's bytes with one ``ChecksumAlgorithm``. A value: a copy goes on
/// on its own. Not thread-safe; one owner at a time.
struct ContentHasher {
  private enum State {
    case sha256(SHA256)
    case xxh3(XXH3State)
    /// Only while a state is taken out to be updated (``update(_:)``): never seen outside it.
    case updating
  }

  private var state: State

  /// A digest of nothing yet.
  init(_ algorithm: ChecksumAlgorithm) {
    switch algorithm {
    case .sha256: state = .sha256(SHA256())
    case .xxh3: state = .xxh3(XXH3State())
    }
  }

  /// Hashes `bytes` after the bytes given before.
  mutating func update(_ bytes: UnsafeRawBufferPointer) {
    // Each state is taken out (`.updating` in its place) so that it is uniquely referenced:
    // updated in place, not copied (SHA256 is copy-on-write too).
    switch state {
    case .sha256(var hasher):
      state = .updating
      hasher.update(bufferPointer: bytes)
      state = .sha256(hasher)
    case .xxh3(var hasher):
      state = .updating
      if !isKnownUniquelyReferenced(&hasher) { hasher = hasher.copy() }
      hasher.update(bytes)
      state = .xxh3(hasher)
    case .updating:
      preconditionFailure("a hasher updated while it is being updated")
    }
  }

  /// Hashes `bytes` after the bytes given before.
  mutating func update<Bytes: Sequence<UInt8>>(contentsOf bytes: Bytes) {
    let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
    if done == nil { Array(bytes).withUnsafeBytes { update($0) } }
  }

  /// The digest of everything hashed so far (``ChecksumAlgorithm/digestSize`` bytes).
  func finalize() -> [UInt8] {
    switch state {
    case .sha256(let hasher): return Array(hasher.finalize())
    case .xxh3(let hasher): return hasher.digest()
    case .updating: preconditionFailure("a hasher read while it is being updated")
    }
  }
}

/// The C side's XXH3-128 state, freed with its owner.
private final class XXH3State {
  private let pointer: OpaquePointer

  init() {
    guard let pointer = ferry_xxh3_create() else { fatalError("out of memory") }
    self.pointer = pointer
  }

  private init(copying other: XXH3State) {
    guard let pointer = ferry_xxh3_copy(other.pointer) else { fatalError("out of memory") }
    self.pointer = pointer
  }

  deinit { ferry_xxh3_free(pointer) }

  func copy() -> XXH3State { XXH3State(copying: self) }

  func update(_ bytes: UnsafeRawBufferPointer) {
    guard let base = bytes.baseAddress, bytes.count > 0 else { return }
    ferry_xxh3_update(pointer, base, bytes.count)
  }

  func digest() -> [UInt8] {
    [UInt8](unsafeUninitializedCapacity: 16) { buffer, count in
      ferry_xxh3_digest(pointer, buffer.baseAddress!)
      count = 16
    }
  }
}
