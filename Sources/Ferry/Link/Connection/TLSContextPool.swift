import NIOSSL
import Synchronization

/// TLS contexts of one configuration, each lent to one connection at a time so that its key
/// log reaches that connection's ``TLSExporter`` (swift-nio-ssl's key log callback belongs to a
/// context, and names no connection). A context goes back to the pool once its connection's
/// handshake has completed (nothing more is logged then) or the connection closed; at most
/// ``maximumIdle`` wait for reuse, so that a stream of connections allocates no context each
/// (a fresh context per connection cost a receiver about 5 KiB a connection in a fragmented heap
/// over its first thousand). Any thread.
final class TLSContextPool: Sendable {
  /// Contexts kept for reuse.
  static let maximumIdle = 16

  /// Where a context's key log goes: the exporter of the connection it is lent to.
  private final class Target: Sendable {
    let exporter = Mutex<TLSExporter?>(nil)
  }

  /// One context and its target.
  private struct Lease: Sendable {
    let context: NIOSSLContext
    let target: Target
  }

  private let configuration: TLSConfiguration
  private let idle = Mutex<[Lease]>([])

  /// - Throws: NIOSSL's error if BoringSSL refuses `configuration` (checked by making one
  ///   context now, kept for the first connection).
  init(_ configuration: TLSConfiguration) throws {
    self.configuration = configuration
    let first = try Self.makeLease(configuration)
    idle.withLock { $0.append(first) }
  }

  /// A context whose key log goes to `exporter` until `exporter` is released
  /// (``TLSExporter/release()``), when the context comes back to the pool.
  ///
  /// - Throws: NIOSSL's error if a new context cannot be made.
  func lend(to exporter: TLSExporter) throws -> NIOSSLContext {
    let lease = try idle.withLock { $0.popLast() } ?? Self.makeLease(configuration)
    lease.target.exporter.withLock { $0 = exporter }
    exporter.onRelease { [weak self] in
      lease.target.exporter.withLock { $0 = nil }
      self?.idle.withLock { idle in
        if idle.count < Self.maximumIdle { idle.append(lease) }
      }
    }
    return lease.context
  }

  private static func makeLease(_ configuration: TLSConfiguration) throws -> Lease {
    let target = Target()
    var configuration = configuration
    configuration.keyLogCallback = { line in
      target.exporter.withLock { $0 }?.record(keyLogLine: line)
    }
    return Lease(context: try NIOSSLContext(configuration: configuration), target: target)
  }
}
