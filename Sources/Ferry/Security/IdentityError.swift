import Crypto
import Foundation
import SwiftASN1
import X509

/// Why the identity cannot be loaded or created.
public enum IdentityError: Error, Hashable, Sendable, CustomStringConvertible {
  /// A file exists but cannot be read.
  case unreadable(path: String, reason: String)
  /// A file exists but is not what it should be; Ferry never replaces it silently.
  case corrupted(path: String, reason: String)
  /// The private key is readable by other users.
  case insecurePermissions(path: String, mode: mode_t)
  /// A file or the directory cannot be written.
  case cannotWrite(path: String, reason: String)

  /// A message naming the file and what to do.
  public var description: String {
    switch self {
    case .unreadable(let path, let reason):
      return "cannot read the identity file \(path): \(reason)"
    case .corrupted(let path, let reason):
      return
        "the identity file \(path) is corrupted (\(reason)). Ferry will not replace it by itself, "
        + "since peers know this identity's fingerprint; restore it from a backup, or move the "
        + "identity files away to create a new identity."
    case .insecurePermissions(let path, let mode):
      return
        "the identity key \(path) is readable by other users (mode \(String(mode, radix: 8))); "
        + "run: chmod 600 \(path)"
    case .cannotWrite(let path, let reason):
      return "cannot write \(path): \(reason)"
    }
  }
}
