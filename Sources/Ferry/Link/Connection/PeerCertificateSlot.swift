import Synchronization

/// The certificate a link's peer presented in the TLS handshake (DER), readable from any
/// thread: the connection handler records it once the handshake completes, and the session
/// hands it to applications that decide on it (``Session/certificateDER(of:)``).
final class PeerCertificateSlot: Sendable {
  private let der = Mutex<[UInt8]?>(nil)

  /// The handshake completed with this certificate. On the link's event loop.
  func record(_ bytes: [UInt8]) {
    der.withLock { $0 = bytes }
  }

  /// The certificate, nil before the handshake completed. Any thread.
  var value: [UInt8]? {
    der.withLock { $0 }
  }
}
