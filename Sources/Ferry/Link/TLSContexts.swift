internal import FerryWire
import NIOCore
import NIOSSL

/// The TLS 1.3 settings of Ferry connections, built from an ``Identity``: mutual
/// authentication with self-signed certificates, trust decided by fingerprint, never by a CA.
///
/// Each connection is lent a context of its own from a ``TLSContextPool``, whose key log goes
/// to that connection's ``TLSExporter`` (the verification code's keying material: swift-nio-ssl
/// has no exporter API) until its handshake is over. A context holds no trust store here, so
/// making one reads no file.
struct TLSContexts: Sendable {
  private let server: TLSContextPool
  private let client: TLSContextPool

  /// Builds both configurations, and a context of each to check them.
  ///
  /// - Throws: NIOSSL's error if the identity's key or certificate is refused by BoringSSL.
  init(identity: Identity) throws {
    let (server, client) = try identity.tlsConfigurations(alpn: WireProtocol.alpn)
    // Refused now rather than at each connection.
    self.server = try TLSContextPool(server)
    self.client = try TLSContextPool(client)
  }

  /// The advertiser's TLS handler: any client certificate is accepted during the handshake
  /// (TLS 1.3's CertificateVerify proves the client holds its key); the connection handler
  /// reads its fingerprint before any application byte.
  ///
  /// - Parameter exporter: The connection's exporter (``ConnectionHandler/exporter``).
  /// - Throws: NIOSSL's error if the context cannot be made.
  func serverHandler(exporter: TLSExporter) throws -> NIOSSLServerHandler {
    NIOSSLServerHandler(context: try server.lend(to: exporter)) { _, promise in
      promise.succeed(.certificateVerified)
    }
  }

  /// The inviter's TLS handler: the server's certificate must hash to `expected`, or, when no
  /// fingerprint is known (direct connection without one), any certificate is accepted and
  /// reported for the user to verify.
  ///
  /// - Parameters:
  ///   - exporter: The connection's exporter (``ConnectionHandler/exporter``).
  ///   - onRefusal: called (on the channel's event loop) with why the certificate was
  ///     refused — the fingerprint it has and the one expected — before the handshake fails.
  /// - Throws: NIOSSL's error if the handler cannot be created.
  func clientHandler(
    expecting expected: FingerprintPin?, exporter: TLSExporter,
    onRefusal: @escaping (String) -> Void
  ) throws -> NIOSSLClientHandler {
    let context = try client.lend(to: exporter)
    return try NIOSSLClientHandler(context: context, serverHostname: nil) { certificates, promise in
      guard let expected else {
        promise.succeed(.certificateVerified)
        return
      }
      guard let leaf = certificates.first, let der = try? leaf.toDERBytes() else {
        onRefusal("the other end presented no certificate")
        promise.succeed(.failed)
        return
      }
      let presented = Fingerprint(sha256Of: der)
      guard expected.admits(presented) else {
        onRefusal(
          "the other end's fingerprint is \(presented.shortDescription)…, "
            + "not the expected \(expected)")
        promise.succeed(.failed)
        return
      }
      promise.succeed(.certificateVerified)
    }
  }
}

/// What an inviter requires of the advertiser's certificate.
enum FingerprintPin: Sendable, CustomStringConvertible {
  /// Exactly this fingerprint (learned from discovery, or given in full).
  case exact(Fingerprint)
  /// A fingerprint starting with these hexadecimal digits (a user's `--to 9F2C41AB`).
  case prefix(String)

  /// Whether `fingerprint` satisfies the pin.
  func admits(_ fingerprint: Fingerprint) -> Bool {
    switch self {
    case .exact(let expected): return fingerprint == expected
    case .prefix(let prefix): return fingerprint.hasPrefix(prefix)
    }
  }

  /// The pin as a user wrote or saw it: `9F2C 41AB 0C3D 7E11…`, or the prefix in upper case.
  var description: String {
    switch self {
    case .exact(let expected): return "\(expected.shortDescription)…"
    case .prefix(let prefix): return "\(prefix.uppercased())…"
    }
  }
}

extension Identity {
  /// This identity as a TLS server's and a TLS client's configuration: TLS 1.3 only; a
  /// certificate required from the peer (on a server, `noHostnameVerification` means "request
  /// and require"); no system trust store — the custom verification callbacks decide; `alpn`
  /// offered; 2 s for the peer's close_notify. Any thread.
  ///
  /// - Throws: NIOSSL's error if BoringSSL refuses the key or the certificate.
  package func tlsConfigurations(alpn: String) throws -> (
    server: TLSConfiguration, client: TLSConfiguration
  ) {
    let certificate = try NIOSSLCertificate(bytes: certificateDER, format: .der)
    let key = try NIOSSLPrivateKey(bytes: Array(privateKey.pemRepresentation.utf8), format: .pem)
    var server = TLSConfiguration.makeServerConfiguration(
      certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
    var client = TLSConfiguration.makeClientConfiguration()
    client.certificateChain = [.certificate(certificate)]
    client.privateKey = .privateKey(key)
    Self.harden(&server, alpn: alpn)
    Self.harden(&client, alpn: alpn)
    return (server, client)
  }

  private static func harden(_ configuration: inout TLSConfiguration, alpn: String) {
    configuration.minimumTLSVersion = .tlsv13
    configuration.maximumTLSVersion = .tlsv13
    configuration.certificateVerification = .noHostnameVerification
    configuration.trustRoots = .certificates([])
    configuration.applicationProtocols = [alpn]
    configuration.shutdownTimeout = .seconds(2)
  }
}
