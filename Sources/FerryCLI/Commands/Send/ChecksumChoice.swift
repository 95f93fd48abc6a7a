import ArgumentParser
import Ferry

/// `send --checksum`: the digest a user picks, by the names `xxhsum` and `sha256sum` users know.
enum ChecksumChoice: String, ExpressibleByArgument, CaseIterable {
  case xxh3
  case sha256

  /// Also accepts the digest's full name, as events print it (`xxh3-128`).
  init?(argument: String) {
    switch argument.lowercased() {
    case "xxh3", "xxh3-128", "xxh128": self = .xxh3
    case "sha256", "sha-256": self = .sha256
    default: return nil
    }
  }

  /// The library's algorithm.
  var algorithm: ChecksumAlgorithm {
    switch self {
    case .xxh3: return .xxh3
    case .sha256: return .sha256
    }
  }
}
