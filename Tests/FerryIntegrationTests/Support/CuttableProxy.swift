import Foundation
import Synchronization

/// A TCP forwarder on 127.0.0.1 that a test can break the way networks break: reset every
/// connection after so many bytes from the client (a reset mid-handshake), cut the connections
/// it carries at once (a dropped link), or stop forwarding while keeping them open (a stall).
/// Plain sockets on threads of their own, never on Swift's cooperative pool.
final class CuttableProxy: Sendable {
  /// Where clients connect.
  let port: UInt16
  private let target: UInt16
  private let listener: Int32
  private let state = Mutex(State())

  private struct State {
    /// Client and upstream sockets of each carried connection.
    var open: [(client: Int32, upstream: Int32)] = []
    /// Reset a connection once this many bytes came from its client (nil: never).
    var resetAfter: Int?
    /// Forward nothing (the connections stay open).
    var stalled = false
    var stopped = false
    /// Client sockets of connections to reset at their thread's next turn.
    var doomed: Set<Int32> = []
    /// Connections accepted so far.
    var accepted = 0
    /// Bytes from clients, all connections together.
    var fromClients = 0
  }

  /// Forwards 127.0.0.1:`port` (chosen by the kernel) to 127.0.0.1:`target`.
  init(to target: UInt16) {
    let (listener, port) = loopbackListener()
    _ = Foundation.listen(listener, 16)
    self.listener = listener
    self.port = port
    self.target = target
    Thread.detachNewThread { [self] in acceptLoop() }
  }

  /// Connections accepted so far.
  var accepted: Int { state.withLock { $0.accepted } }

  /// Bytes clients sent through it so far.
  var bytesFromClients: Int { state.withLock { $0.fromClients } }

  /// Resets (RST, no FIN, no TLS close) each connection once its client sent `bytes`; nil
  /// forwards everything again.
  func resetAfter(bytes: Int?) {
    state.withLock { $0.resetAfter = bytes }
  }

  /// Stops forwarding, or starts again; the connections stay open either way.
  func stall(_ stalled: Bool) {
    state.withLock { $0.stalled = stalled }
  }

  /// Resets every connection it carries now, as a dropped link looks to both ends. Each
  /// connection's own thread resets it (within 50 ms): only that thread closes its sockets.
  func cut() {
    state.withLock { state in
      state.doomed.formUnion(state.open.map(\.client))
    }
  }

  /// Cuts every connection and stops listening.
  func stop() {
    state.withLock { $0.stopped = true }
    cut()
  }

  private func acceptLoop() {
    defer { close(listener) }
    while !state.withLock({ $0.stopped }) {
      var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
      guard poll(&poller, 1, 100) > 0 else { continue }
      let client = accept(listener, nil, nil)
      guard client >= 0 else { continue }
      let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_port = target.bigEndian
      address.sin_addr.s_addr = inet_addr("127.0.0.1")
      let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
      }
      guard connected else {
        Self.reset(client)
        close(upstream)
        continue
      }
      state.withLock {
        $0.open.append((client, upstream))
        $0.accepted += 1
      }
      Thread.detachNewThread { [self] in pump(client: client, upstream: upstream) }
    }
  }

  /// Copies bytes both ways until either end closes, the proxy cuts them, or the client's
  /// byte count reaches ``resetAfter(bytes:)``.
  private func pump(client: Int32, upstream: Int32) {
    var fromClient = 0
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    var pollers = [
      pollfd(fd: client, events: Int16(POLLIN), revents: 0),
      pollfd(fd: upstream, events: Int16(POLLIN), revents: 0),
    ]
    while true {
      let (stalled, resetAfter, isCut) = state.withLock { state in
        (state.stalled, state.resetAfter, state.doomed.contains(client))
      }
      if isCut || (resetAfter.map { fromClient >= $0 } ?? false) {
        drop(client: client, upstream: upstream)
        return
      }
      if stalled {
        usleep(20_000)
        continue
      }
      pollers[0].revents = 0
      pollers[1].revents = 0
      guard poll(&pollers, 2, 50) > 0 else { continue }
      for (index, poller) in pollers.enumerated() where poller.revents != 0 {
        let from = index == 0 ? client : upstream
        let to = index == 0 ? upstream : client
        var limit = buffer.count
        if index == 0, let resetAfter { limit = max(0, min(limit, resetAfter - fromClient)) }
        let count =
          limit == 0 ? 0 : buffer.withUnsafeMutableBytes { recv(from, $0.baseAddress, limit, 0) }
        guard limit == 0 || count > 0 else {
          // One end closed: close both, as a plain TCP path passes the FIN on.
          forget(client)
          close(client)
          close(upstream)
          return
        }
        if index == 0 {
          fromClient += count
          state.withLock { $0.fromClients += count }
        }
        var sent = 0
        while sent < count {
          let wrote = buffer.withUnsafeBytes {
            send(to, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL))
          }
          if wrote <= 0 { break }
          sent += wrote
        }
      }
    }
  }

  /// Resets both sockets of one connection.
  private func drop(client: Int32, upstream: Int32) {
    forget(client)
    Self.reset(client)
    Self.reset(upstream)
  }

  /// No longer lists the connection of `client` (its sockets are about to close).
  private func forget(_ client: Int32) {
    state.withLock { state in
      state.open.removeAll { $0.client == client }
      state.doomed.remove(client)
    }
  }

  /// Closes `socket` with a TCP reset (SO_LINGER 0) rather than a FIN.
  private static func reset(_ socket: Int32) {
    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
    setsockopt(socket, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    close(socket)
  }
}
