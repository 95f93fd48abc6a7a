import Ferry
import NIOCore
import NIOSSL
import Synchronization

/// How strictly a LocalSend server asks senders to prove who they are.
public enum LocalSendSenderCheck: Sendable {
  /// LocalSend 2.2 (apps 1.18 and later): a client certificate is required, and what a sender
  /// claims (its `fingerprint` in `register` and `prepare-upload`) must be that certificate's.
  case certificate
  /// Also apps of 1.17 and older, which present no certificate: such a sender is shown and
  /// reported as unverified, and never satisfies an accept list or a known name.
  case allowUnverified
}

/// The certificate a connection's peer presented in its TLS handshake, recorded by the verify
/// callback and read by the HTTP handler before it answers anything. Any thread.
final class PresentedCertificate: Sendable {
  private let fingerprint = Mutex<Fingerprint?>(nil)

  /// Records the peer's leaf certificate.
  func record(_ der: [UInt8]) {
    fingerprint.withLock { $0 = Fingerprint(sha256Of: der) }
  }

  /// The peer's certificate fingerprint; nil when it presented none (or not yet).
  var value: Fingerprint? { fingerprint.withLock { $0 } }
}

/// The TLS settings of LocalSend connections, built from Ferry's identity (its certificate is
/// LocalSend's: the fingerprint announced is the one presented). TLS 1.3, ALPN `http/1.1`; a
/// server asks for a client certificate and accepts any it proves to hold the key of, recording
/// its fingerprint; a client presents its own and pins the server's to the fingerprint it
/// announced, inside the handshake.
struct LocalSendTLS: Sendable {
  private let server: NIOSSLContext
  private let client: NIOSSLContext

  /// - Throws: NIOSSL's error when BoringSSL refuses the identity.
  init(identity: Identity, senderCheck: LocalSendSenderCheck) throws {
    var (server, client) = try identity.tlsConfigurations(alpn: "http/1.1")
    // Requested always; required unless older apps are let in (they present none).
    if senderCheck == .allowUnverified { server.certificateVerification = .optionalVerification }
    self.server = try NIOSSLContext(configuration: server)
    self.client = try NIOSSLContext(configuration: client)
  }

  /// A server-side handler that records the client's certificate in `presented`.
  func serverHandler(recording presented: PresentedCertificate) -> NIOSSLServerHandler {
    NIOSSLServerHandler(context: server) { certificates, promise in
      if let leaf = certificates.first, let der = try? leaf.toDERBytes() {
        presented.record(der)
      }
      promise.succeed(.certificateVerified)
    }
  }

  /// A client-side handler that accepts only a server whose certificate hashes to `expected`
  /// (any, recorded in `presented`, when nil: an older app's self-signed certificate that
  /// nothing announced).
  ///
  /// - Throws: NIOSSL's error when the handler cannot be made.
  func clientHandler(expecting expected: Fingerprint?, recording presented: PresentedCertificate)
    throws -> NIOSSLClientHandler
  {
    try NIOSSLClientHandler(context: client, serverHostname: nil) { certificates, promise in
      guard let leaf = certificates.first, let der = try? leaf.toDERBytes() else {
        return promise.succeed(.failed)
      }
      presented.record(der)
      guard let expected else { return promise.succeed(.certificateVerified) }
      promise.succeed(Fingerprint(sha256Of: der) == expected ? .certificateVerified : .failed)
    }
  }
}
