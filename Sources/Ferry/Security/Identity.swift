import Crypto
import Foundation
import SwiftASN1
import X509

/// This installation's identity: a self-signed P-256 certificate and its private key, created on
/// first use and loaded afterwards. Its ``fingerprint`` is how peers know it.
///
/// Files, in ``FerryHome`` (directory mode 0700):
/// - `identity-key.pem`: the PKCS#8 private key, mode 0600;
/// - `identity-cert.pem`: the certificate, mode 0644.
///
/// Both are written atomically. A file that exists but cannot be read or parsed is an error
/// naming it — never a reason to make a new identity, which would change the fingerprint peers
/// know.
public struct Identity: Sendable {
  /// The certificate, as swift-certificates models it.
  public let certificate: Certificate
  /// The certificate in DER.
  public let certificateDER: [UInt8]
  /// The private key.
  public let privateKey: P256.Signing.PrivateKey
  /// SHA-256 of ``certificateDER``.
  public let fingerprint: Fingerprint

  /// File name of the private key.
  public static let keyFileName = "identity-key.pem"
  /// File name of the certificate.
  public static let certificateFileName = "identity-cert.pem"

  /// Loads the identity in `directory`, creating it first if neither file exists.
  ///
  /// - Parameter directory: Defaults to ``FerryHome/defaultDirectory``.
  /// - Throws: ``IdentityError`` naming the file when one is unreadable, corrupted, missing its
  ///   partner, readable by others (the key), or cannot be written.
  public static func loadOrCreate(in directory: URL = FerryHome.defaultDirectory)
    throws(IdentityError) -> Identity
  {
    try FerryHome.prepare(directory)
    let keyPath = directory.appendingPathComponent(keyFileName).path
    let certificatePath = directory.appendingPathComponent(certificateFileName).path
    do {
      return try AtomicFile.withLock(directory.appendingPathComponent(".lock").path) {
        let keyExists = FileManager.default.fileExists(atPath: keyPath)
        let certificateExists = FileManager.default.fileExists(atPath: certificatePath)
        switch (keyExists, certificateExists) {
        case (false, false):
          return try create(keyPath: keyPath, certificatePath: certificatePath)
        case (true, true):
          return try load(keyPath: keyPath, certificatePath: certificatePath)
        case (true, false):
          throw IdentityError.corrupted(
            path: certificatePath, reason: "missing, but the key exists")
        case (false, true):
          throw IdentityError.corrupted(
            path: keyPath, reason: "missing, but the certificate exists")
        }
      }
    } catch let error as IdentityError {
      throw error
    } catch {
      throw .cannotWrite(path: directory.path, reason: "\(error)")
    }
  }

  /// Builds an identity from an existing key and certificate (checked to match).
  ///
  /// - Throws: ``IdentityError/corrupted(path:reason:)`` (with path "<memory>") when the key is
  ///   not the certificate's.
  public init(certificate: Certificate, privateKey: P256.Signing.PrivateKey) throws(IdentityError) {
    guard certificate.publicKey == Certificate.PublicKey(privateKey.publicKey) else {
      throw .corrupted(path: "<memory>", reason: "the private key does not match the certificate")
    }
    var serializer = DER.Serializer()
    do {
      try serializer.serialize(certificate)
    } catch {
      throw .corrupted(path: "<memory>", reason: "cannot encode the certificate: \(error)")
    }
    self.certificate = certificate
    self.privateKey = privateKey
    self.certificateDER = serializer.serializedBytes
    self.fingerprint = Fingerprint(sha256Of: serializer.serializedBytes)
  }

  /// Makes a new identity in memory (nothing is written): a fresh P-256 key and a self-signed
  /// certificate valid for 20 years.
  public static func generate() -> Identity {
    let key = P256.Signing.PrivateKey()
    // Building a certificate from fixed, valid parts cannot fail.
    let certificate = try! selfSignedCertificate(for: key)
    return try! Identity(certificate: certificate, privateKey: key)
  }

  /// Builds an identity from the PEM texts ``certificatePEM`` and ``privateKeyPEM`` wrote, as
  /// an application restores an identity it keeps (in its keychain or an archive).
  ///
  /// - Throws: ``IdentityError/corrupted(path:reason:)`` (with path "<memory>") when either
  ///   text does not parse or the key is not the certificate's.
  public init(certificatePEM: String, privateKeyPEM: String) throws(IdentityError) {
    let key: P256.Signing.PrivateKey
    do {
      key = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
    } catch {
      throw .corrupted(path: "<memory>", reason: "not a P-256 private key in PEM")
    }
    let certificate: Certificate
    do {
      certificate = try Certificate(pemEncoded: certificatePEM)
    } catch {
      throw .corrupted(path: "<memory>", reason: "not an X.509 certificate in PEM")
    }
    try self.init(certificate: certificate, privateKey: key)
  }

  /// The PEM (PKCS#8) of the private key: a secret, to be stored as one.
  public var privateKeyPEM: String {
    privateKey.pemRepresentation
  }

  /// The PEM of the certificate.
  public var certificatePEM: String {
    // Serializing a certificate that was parsed or built cannot fail.
    try! certificate.serializeAsPEM().pemString
  }

  private static func create(keyPath: String, certificatePath: String) throws -> Identity {
    let identity = generate()
    do {
      try AtomicFile.write(
        Array(identity.privateKey.pemRepresentation.utf8), to: keyPath, mode: 0o600)
    } catch {
      throw IdentityError.cannotWrite(path: keyPath, reason: "\(error)")
    }
    do {
      try AtomicFile.write(
        Array((identity.certificatePEM + "\n").utf8), to: certificatePath, mode: 0o644)
    } catch {
      unlink(keyPath)
      throw IdentityError.cannotWrite(path: certificatePath, reason: "\(error)")
    }
    return identity
  }

  private static func load(keyPath: String, certificatePath: String) throws -> Identity {
    var status = stat()
    if stat(keyPath, &status) == 0, status.st_mode & 0o077 != 0 {
      throw IdentityError.insecurePermissions(path: keyPath, mode: status.st_mode & 0o777)
    }
    let keyText = try readText(keyPath)
    let certificateText = try readText(certificatePath)
    let key: P256.Signing.PrivateKey
    do {
      key = try P256.Signing.PrivateKey(pemRepresentation: keyText)
    } catch {
      throw IdentityError.corrupted(path: keyPath, reason: "not a P-256 private key in PEM")
    }
    let certificate: Certificate
    do {
      certificate = try Certificate(pemEncoded: certificateText)
    } catch {
      throw IdentityError.corrupted(
        path: certificatePath, reason: "not an X.509 certificate in PEM")
    }
    do {
      return try Identity(certificate: certificate, privateKey: key)
    } catch {
      throw IdentityError.corrupted(
        path: keyPath, reason: "the key does not match \(certificatePath)")
    }
  }

  private static func readText(_ path: String) throws -> String {
    guard let data = FileManager.default.contents(atPath: path) else {
      throw IdentityError.unreadable(path: path, reason: String(cString: strerror(errno)))
    }
    guard let text = String(data: data, encoding: .utf8) else {
      throw IdentityError.corrupted(path: path, reason: "not text")
    }
    return text
  }

  static func selfSignedCertificate(for key: P256.Signing.PrivateKey) throws -> Certificate {
    let name = try DistinguishedName {
      OrganizationName("Ferry")
      CommonName("Ferry peer")
    }
    let now = Date()
    return try Certificate(
      version: .v3,
      serialNumber: Certificate.SerialNumber(),
      publicKey: .init(key.publicKey),
      notValidBefore: now.addingTimeInterval(-3600),
      notValidAfter: now.addingTimeInterval(20 * 365 * 24 * 3600),
      issuer: name,
      subject: name,
      signatureAlgorithm: .ecdsaWithSHA256,
      extensions: try Certificate.Extensions {
        Critical(BasicConstraints.notCertificateAuthority)
        Critical(KeyUsage(digitalSignature: true))
        try ExtendedKeyUsage([.serverAuth, .clientAuth])
        SubjectAlternativeNames([.dnsName("ferry.local")])
      },
      issuerPrivateKey: .init(key))
  }
}

extension Fingerprint {
  /// The SHA-256 of `der`, the fingerprint of a certificate in DER.
  public init(sha256Of der: [UInt8]) {
    self = try! Fingerprint(bytes: Array(SHA256.hash(data: der)))
  }
}
