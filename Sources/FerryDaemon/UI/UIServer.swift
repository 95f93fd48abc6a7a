import Dispatch
import FerryLocalSend
import NIOCore
import NIOPosix
import Synchronization

/// The daemon's web page's server: HTTP/1.1 on 127.0.0.1 and ::1 only (never another
/// interface), one port for both (``port``; asked for 0, the system's choice), every request
/// through ``UIEndpoints`` and its ``UIGuard``. A connection from any other address is closed
/// before a byte is read. Its connections have the caps of the API's (16 in all, a head
/// within 10 s, 30 s of silence but while an answer streams). Any thread.
package final class UIServer: Sendable {
  /// Why the page cannot be served.
  package struct Failure: Error, Sendable, CustomStringConvertible {
    /// The port asked for.
    package let port: Int
    /// Why.
    package let reason: String

    package var description: String {
      "cannot serve the page on 127.0.0.1 port \(port): \(reason) (choose another with --ui-port, or --ui-port off)"
    }
  }

  /// The port it listens on, on both addresses.
  package let port: Int
  private let channels: [any Channel]

  private init(port: Int, channels: [any Channel]) {
    (self.port, self.channels) = (port, channels)
  }

  /// Listens on 127.0.0.1 `port` (0: one the system picks), then ::1 on the same port when
  /// this machine has IPv6 loopback, and serves `routes` under `logins`.
  ///
  /// - Throws: ``Failure`` when 127.0.0.1 cannot be bound (the port is taken, say), or ::1's
  ///   port is taken.
  package static func start(
    port: Int, routes: APIRoutes, logins: UILogins, events: EventLog, pairing: String
  ) async throws(Failure) -> UIServer {
    let slots = ConnectionSlots(total: APIServer.connections, perAddress: APIServer.connections)
    let bound = Bound()
    let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .serverChannelOption(.backlog, value: 32)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .childChannelInitializer { channel in
        admit(
          channel, slots: slots,
          endpoints: UIEndpoints(
            api: APIEndpoints(routes: routes, slots: slots), logins: logins, events: events,
            port: bound.port, pairing: pairing))
      }
    let v4: any Channel
    do {
      v4 = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
    } catch {
      throw Failure(port: port, reason: "\(error)")
    }
    let chosen = v4.localAddress?.port ?? port
    bound.port = chosen
    var channels = [v4]
    do {
      channels.append(try await bootstrap.bind(host: "::1", port: chosen).get())
    } catch let error as IOError where error.errnoCode == EADDRINUSE {
      // Taken by someone else: they would answer as localhost:PORT. Not served at all.
      try? await v4.close()
      throw Failure(port: port, reason: "[::1]:\(chosen) is taken")
    } catch {
      // No IPv6 loopback (disabled, or a namespace without it): 127.0.0.1 alone.
    }
    return UIServer(port: chosen, channels: channels)
  }

  /// Stops listening (connections under way end with their requests).
  package func stop() async {
    for channel in channels { try? await channel.close() }
  }

  /// Whether `address` (an IP address's text) is a loopback address: 127.0.0.0/8, ::1, or
  /// 127.0.0.0/8 mapped into IPv6.
  package static func isLoopback(_ address: String) -> Bool {
    address == "::1" || address.hasPrefix("127.") || address.hasPrefix("::ffff:127.")
  }

  /// Lets `channel` in when it comes from a loopback address, from a process of this user or
  /// root (``SocketOwner``: the API socket's rule), and a slot is free; any other is closed
  /// before a byte is read.
  private static func admit(_ channel: any Channel, slots: ConnectionSlots, endpoints: UIEndpoints)
    -> EventLoopFuture<Void>
  {
    let address = channel.remoteAddress?.ipAddress ?? ""
    guard isLoopback(address), let client = channel.remoteAddress?.port,
      let server = channel.localAddress, let serverIP = server.ipAddress,
      let serverPort = server.port
    else { return channel.close() }
    // The table is read off the event loop (it may be long), one connection at a time.
    let owner = channel.eventLoop.makePromise(of: uid_t?.self)
    lookups.async {
      owner.succeed(
        SocketOwner.uid(client: (address, client), server: (serverIP, serverPort)))
    }
    return owner.futureResult.flatMap { owner in
      guard let owner, owner == geteuid() || owner == 0 else { return channel.close() }
      return APIServer.serve(channel, from: address, slots: slots, endpoints: endpoints)
    }
  }

  /// Where connections' owners are looked up, one after another.
  private static let lookups = DispatchQueue(label: "ferry.ui.socket-owner")
}

/// The port chosen, once the first address is bound (connections come after it).
private final class Bound: Sendable {
  private let value = Mutex(0)

  var port: Int {
    get { value.withLock { $0 } }
    set { value.withLock { $0 = newValue } }
  }
}
