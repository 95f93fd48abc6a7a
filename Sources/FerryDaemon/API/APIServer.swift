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
  /// The socket file this server made (device and inode): the one its stop removes.
  private let identity: (device: UInt64, inode: UInt64)?

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
    var status = stat()
    identity =
      lstat(path, &status) == 0 ? (UInt64(status.st_dev), UInt64(status.st_ino)) : nil
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

  /// Stops listening and removes the socket — if it is still the one it made (connections
  /// under way end with their requests).
  package func stop() async {
    try? await channel.close()
    var status = stat()
    if let identity, lstat(path, &status) == 0, UInt64(status.st_dev) == identity.device,
      UInt64(status.st_ino) == identity.inode
    {
      unlink(path)
    }
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
      return serve(
        channel, from: "uid \(peer.uid)", slots: slots,
        endpoints: APIEndpoints(routes: routes, slots: slots))
    }.flatMapError { _ in channel.close() }
  }

  /// Serves `channel`, from `address`, by `endpoints` in a slot of `slots` (a 10 s request
  /// deadline, 30 s of silence); with every slot busy, answers 503 and closes it. The API's
  /// and the web page's servers alike.
  static func serve(
    _ channel: any Channel, from address: String, slots: ConnectionSlots,
    endpoints: some HTTPEndpoints
  ) -> EventLoopFuture<Void> {
    guard let slot = slots.admit(channel, from: address) else {
      // Every connection is under way (event streams, say): said, not dropped.
      return channel.eventLoop.makeCompletedFuture {
        try channel.pipeline.syncOperations.addHandler(
          Refusal(
            APIProblem(503, "unavailable", "too many connections at once; try again"),
            status: "503 Service Unavailable"))
      }
    }
    channel.closeFuture.whenComplete { _ in slots.release(slot) }
    do {
      try HTTPServing.serve(
        channel, endpoints: endpoints, address: address, slot: slot,
        budget: APIEndpoints.held,
        limits: HTTPRequestStateMachine.Limits(requestDeadline: .seconds(10)),
        idleTimeout: .seconds(30))
      return channel.eventLoop.makeSucceededVoidFuture()
    } catch {
      return channel.close()
    }
  }

  /// Tells a process of another user why it is turned away, and closes its connection (once
  /// the connection is registered: the initializer runs before it is).
  private static func refuse(_ channel: any Channel, uid: UInt32, user: uid_t)
    -> EventLoopFuture<Void>
  {
    let problem = APIProblem(
      403, "forbidden",
      "this daemon answers user \(user) and root only, not user \(uid)")
    return channel.eventLoop.makeCompletedFuture {
      try channel.pipeline.syncOperations.addHandler(Refusal(problem, status: "403 Forbidden"))
    }
  }

  /// Makes `folder` (0700), or checks that it is a folder (not a link) of this user's that
  /// nobody else may enter. A folder the daemon makes is its own, and so is its default one
  /// (tightened to 0700 if an earlier run left it open); any other is never
  /// changed — `--socket /tmp/x.sock` must not make /tmp private — and is refused if others
  /// may enter it.
  private static func prepare(_ folder: String) throws(Failure) {
    let made = mkdir(folder, 0o700) == 0
    let ours = made || folder == (defaultPath() as NSString).deletingLastPathComponent
    if !made && errno != EEXIST {
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
    guard status.st_mode & 0o077 != 0 else { return }
    guard ours else {
      throw .folder(
        folder,
        reason: "others may enter it (mode \(String(status.st_mode & 0o777, radix: 8))): put the "
          + "socket in a folder of its own, mode 0700")
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

/// Answers the first bytes a refused connection sends with one error, then closes it (a client
/// that sends nothing is closed after 5 s). Answering after its request, not at once: a client
/// whose connection closes before it wrote its request reports a failure to connect, not the
/// reason.
final class Refusal: ChannelInboundHandler, @unchecked Sendable {
  typealias InboundIn = ByteBuffer
  private let problem: APIProblem
  private let status: String
  private var answered = false

  init(_ problem: APIProblem, status: String) { (self.problem, self.status) = (problem, status) }

  func channelActive(context: ChannelHandlerContext) {
    let channel = context.channel
    channel.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
    context.fireChannelActive()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    guard !answered else { return }
    answered = true
    let body = problem.json
    var buffer = context.channel.allocator.buffer(capacity: body.count + 128)
    buffer.writeString(
      "HTTP/1.1 \(status)\r\ncontent-type: application/json\r\ncontent-length: "
        + "\(body.count)\r\nconnection: close\r\n\r\n")
    buffer.writeBytes(body)
    let channel = context.channel
    context.writeAndFlush(NIOAny(buffer)).whenComplete { _ in channel.close(promise: nil) }
  }
}
