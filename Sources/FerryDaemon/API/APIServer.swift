import CFerrySystem
import Ferry
import FerryLocalSend
import Foundation
import NIOCore
import NIOPosix

#if canImport(Glibc)
  import Glibc
#endif

/// The control API's server: HTTP/1.1 on a Unix socket in a folder only this user may enter
/// (0700; the socket 0600), answering only processes of this user and root — each
/// connection's peer is checked by its credentials (SO_PEERCRED) before a byte is read. Its
/// connections have the caps of Ferry's other HTTP servers (``ConnectionSlots``: 16 in all;
/// a head within 10 s; 30 s of silence). Any thread.
package final class APIServer: Sendable {
  /// Why the server could not start.
  package enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The socket's folder cannot be made, or is not this user's alone.
    case folder(String, reason: String)
    /// Another daemon answers on the socket.
    case running(String)
    /// The socket cannot be bound.
    case bind(String, reason: String)

    package var description: String {
      switch self {
      case .folder(let path, let reason): "cannot use \(path) for the API's socket: \(reason)"
      case .running(let path): "a ferry daemon already answers on \(path)"
      case .bind(let path, let reason): "cannot listen on \(path): \(reason)"
      }
    }
  }

  /// The most connections at once.
  static let connections = 16

  /// The socket's path.
  package let path: String
  private let routes: APIRoutes
  private let channel: any Channel

  /// The socket for this user: `$XDG_RUNTIME_DIR/ferry/api.sock` when that is an absolute
  /// folder, else `run/api.sock` in Ferry's home.
  package static func defaultPath(
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) -> String {
    if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
      return runtime + "/ferry/api.sock"
    }
    return FerryHome.defaultDirectory.appendingPathComponent("run/api.sock").path
  }

  private init(path: String, routes: APIRoutes, channel: any Channel) {
    (self.path, self.routes, self.channel) = (path, routes, channel)
  }

  /// Listens on `path` (its folder created 0700, or checked to be this user's and tightened
  /// to 0700; a socket left by a daemon that died is replaced) and answers by `routes`.
  ///
  /// - Throws: ``Failure``.
  package static func start(at path: String, routes: APIRoutes) async throws(Failure)
    -> APIServer
  {
    let folder = (path as NSString).deletingLastPathComponent
    try prepare(folder)
    try await replaceStale(path)
    let server = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .serverChannelOption(.backlog, value: 32)
    let slots = ConnectionSlots(total: connections, perAddress: connections)
    let me = geteuid()
    let bound: any Channel
    do {
      bound = try await server.childChannelInitializer { channel in
        Self.admit(channel, user: me, slots: slots, routes: routes)
      }.bind(unixDomainSocketPath: path).get()
    } catch {
      throw .bind(path, reason: "\(error)")
    }
    guard chmod(path, 0o600) == 0 else {
      bound.close(promise: nil)
      throw .bind(path, reason: String(cString: strerror(errno)))
    }
    return APIServer(path: path, routes: routes, channel: bound)
  }

  /// Stops listening and removes the socket (connections under way end with their requests).
  package func stop() async {
    try? await channel.close()
    unlink(path)
  }

  /// Lets `channel` in when its peer is `user` or root; otherwise answers 403 and closes it.
  private static func admit(
    _ channel: any Channel, user: uid_t, slots: ConnectionSlots, routes: APIRoutes
  ) -> EventLoopFuture<Void> {
    let credentials: EventLoopFuture<ferry_peer_credentials>
    if let provider = channel as? any SocketOptionProvider {
      credentials = provider.unsafeGetSocketOption(
        level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
    } else {
      credentials = channel.eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
    }
    return credentials.flatMap { peer in
      guard peer.uid == user || peer.uid == 0 else {
        return refuse(channel, uid: peer.uid, user: user)
      }
      guard let slot = slots.admit(channel, from: "uid \(peer.uid)") else {
        return channel.close()
      }
      channel.closeFuture.whenComplete { _ in slots.release(slot) }
      do {
        try HTTPServing.serve(
          channel, endpoints: APIEndpoints(routes: routes, slots: slots),
          address: "uid \(peer.uid)", slot: slot, budget: nil,
          limits: HTTPRequestStateMachine.Limits(requestDeadline: .seconds(10)),
          idleTimeout: .seconds(30))
        return channel.eventLoop.makeSucceededVoidFuture()
      } catch {
        return channel.close()
      }
    }.flatMapError { _ in channel.close() }
  }

  /// Tells a process of another user why it is turned away, and closes its connection.
  private static func refuse(_ channel: any Channel, uid: UInt32, user: uid_t)
    -> EventLoopFuture<Void>
  {
    let problem = APIProblem(
      403, "forbidden",
      "this daemon answers user \(user) and root only, not user \(uid)")
    let body = problem.json
    var buffer = channel.allocator.buffer(capacity: body.count + 128)
    buffer.writeString(
      "HTTP/1.1 403 Forbidden\r\ncontent-type: application/json\r\ncontent-length: "
        + "\(body.count)\r\nconnection: close\r\n\r\n")
    buffer.writeBytes(body)
    return channel.writeAndFlush(buffer).flatMap { channel.close() }
  }

  /// Makes `folder` (0700), or checks that it is a folder (not a link) of this user's, and
  /// tightens it to 0700.
  private static func prepare(_ folder: String) throws(Failure) {
    if mkdir(folder, 0o700) != 0 && errno != EEXIST {
      // Its parents (Ferry's home, say) may not exist yet.
      do {
        try FileManager.default.createDirectory(
          atPath: folder, withIntermediateDirectories: true,
          attributes: [.posixPermissions: 0o700])
      } catch {
        throw .folder(folder, reason: "it cannot be created")
      }
    }
    var status = stat()
    guard lstat(folder, &status) == 0 else {
      throw .folder(folder, reason: String(cString: strerror(errno)))
    }
    guard status.st_mode & S_IFMT == S_IFDIR else {
      throw .folder(folder, reason: "it is not a folder")
    }
    guard status.st_uid == geteuid() else {
      throw .folder(folder, reason: "it belongs to user \(status.st_uid), not to this user")
    }
    guard chmod(folder, 0o700) == 0 else {
      throw .folder(folder, reason: String(cString: strerror(errno)))
    }
  }

  /// Removes a socket left at `path` by a daemon that is gone; fails when one answers there.
  private static func replaceStale(_ path: String) async throws(Failure) {
    var status = stat()
    guard lstat(path, &status) == 0 else { return }
    guard status.st_mode & S_IFMT == S_IFSOCK else {
      throw .bind(path, reason: "something other than a socket is there")
    }
    let answering: Bool
    do {
      let probe = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .connectTimeout(.seconds(2))
        .connect(unixDomainSocketPath: path).get()
      try? await probe.close()
      answering = true
    } catch {
      answering = false
    }
    if answering { throw .running(path) }
    unlink(path)
  }
}
