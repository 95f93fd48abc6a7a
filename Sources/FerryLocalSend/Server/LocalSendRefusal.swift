import Ferry
import Foundation
import NIOCore
import NIOSSL
import NIOTLS
import Synchronization

/// A LocalSend sender turned away in the TLS handshake, before any request: what a person at
/// the receiver needs to know, since the sender's app only says "connection failed".
public struct LocalSendRefusal: Sendable, Equatable {
  /// Why it was turned away.
  public enum Reason: String, Sendable {
    /// It presented no client certificate: LocalSend 1.17 and older, and implementations of
    /// the protocol without certificates (they claim a key they cannot prove).
    case noCertificate = "no-certificate"
    /// It spoke plain HTTP to the HTTPS port (LocalSend's "encryption" switched off).
    case plainHTTP = "plain-http"
    /// Its TLS handshake failed otherwise (not TLS 1.3, a certificate that does not prove its
    /// key, a connection cut mid-handshake).
    case handshakeFailed = "tls"
  }

  /// The sender's address (without its port).
  public let address: String
  /// Why it was turned away.
  public let reason: Reason
  /// The handshake's failure in words.
  public let detail: String

  /// A refusal of `address` for `reason`.
  public init(address: String, reason: Reason, detail: String) {
    self.address = address
    self.reason = reason
    self.detail = detail
  }

  /// What BoringSSL's `error` in a server handshake means for a LocalSend sender at `address`;
  /// nil for a connection that merely went (nothing to tell a person).
  static func classify(_ error: any Error, from address: String) -> LocalSendRefusal? {
    let text = "\(error)"
    if text.contains("PEER_DID_NOT_RETURN_A_CERTIFICATE") || text.contains("CERTIFICATE_REQUIRED") {
      return LocalSendRefusal(
        address: address, reason: .noCertificate, detail: "it presented no certificate")
    }
    if text.contains("HTTP_REQUEST") || text.contains("WRONG_VERSION_NUMBER") {
      return LocalSendRefusal(
        address: address, reason: .plainHTTP, detail: "it spoke plain HTTP to the HTTPS port")
    }
    guard error is NIOSSLError || error is BoringSSLError else { return nil }
    if case NIOSSLError.uncleanShutdown = error { return nil }
    return LocalSendRefusal(
      address: address, reason: .handshakeFailed, detail: ErrorWords.describe(error))
  }
}

/// Which refusals were reported lately: each sender address once per ``interval`` (its app
/// retries, and each retry would be reported again), at most ``capacity`` addresses
/// remembered — counted in all, so that a flood of addresses costs bounded memory and, past
/// the cap, reports nothing new until entries expire. Thread-safe.
final class RefusalReports: Sendable {
  /// How long an address's refusal is not reported again.
  static let interval: Duration = .seconds(600)
  /// Addresses remembered at most.
  static let capacity = 1024

  private let reported = Mutex<[String: ContinuousClock.Instant]>([:])

  /// Whether `refusal` is to be reported now (and, if so, it is remembered).
  func shouldReport(_ refusal: LocalSendRefusal, now: ContinuousClock.Instant = .now) -> Bool {
    let key = refusal.address + "|" + refusal.reason.rawValue
    return reported.withLock { reported in
      if let last = reported[key], now - last < Self.interval { return false }
      if reported.count >= Self.capacity {
        reported = reported.filter { now - $0.value < Self.interval }
        if reported.count >= Self.capacity { return false }
      }
      reported[key] = now
      return true
    }
  }
}

/// Sits behind a server's TLS handler until the handshake is over: records the client's
/// certificate from the TLS session once the handshake completes — a resumed session (LocalSend
/// 1.18's rustls client resumes) runs no verify callback, and its sender was refused as
/// claiming a key it had proved the connection before — and reports a handshake that failed,
/// before any byte of a request, to `onRefusal`. On the channel's event loop.
final class HandshakeWatcher: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
  typealias InboundIn = ByteBuffer
  typealias InboundOut = ByteBuffer

  private let address: String
  private let presented: PresentedCertificate
  private let onRefusal: @Sendable (LocalSendRefusal) -> Void
  private var done = false

  init(
    address: String, presented: PresentedCertificate,
    onRefusal: @escaping @Sendable (LocalSendRefusal) -> Void
  ) {
    self.address = address
    self.presented = presented
    self.onRefusal = onRefusal
  }

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if let event = event as? TLSUserEvent, case .handshakeCompleted = event,
      presented.value == nil,
      let certificate = try? context.pipeline.syncOperations.nioSSL_peerCertificate(),
      let der = try? certificate.toDERBytes()
    {
      presented.record(der)
    }
    context.fireUserInboundEventTriggered(event)
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    context.fireChannelRead(data)
    // Decrypted bytes: the handshake is over; nothing more to watch.
    if !done {
      done = true
      context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    if !done {
      done = true
      if let refusal = LocalSendRefusal.classify(error, from: address) { onRefusal(refusal) }
    }
    context.fireErrorCaught(error)
  }
}
