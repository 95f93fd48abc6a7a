import Ferry
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// `ferry send --web`: a page from which a browser downloads the files offered, at a link with
/// an unguessable token (``LocalSendWebAccess``), through LocalSend's "share via link"
/// endpoints: `prepare-download` (the application is asked about each browser: ``requests``)
/// and `download?sessionId&fileId`. A session is bound to the address that prepared it. What
/// the browsers download comes out of ``events``.
///
/// Thread-safe. Connections run on NIO's event loops; files go out by `sendfile(2)`.
public final class WebShareServer: Sendable {
  /// A file offered: where it is, the path the browser sees, its size.
  public struct SharedFile: Sendable {
    /// The file on disk.
    public let url: URL
    /// Its path as offered (relative, `/`-separated).
    public let path: String
    /// Its size, as read when the offer was made.
    public let size: UInt64
    /// Its device and inode when the offer was made (nil: not checked): a download is refused
    /// once another file is in its place.
    public let identity: (device: UInt64, inode: UInt64)?

    /// A file offered at `path`; `identity`, its device and inode as the offer read them.
    public init(url: URL, path: String, size: UInt64, identity: (device: UInt64, inode: UInt64)?) {
      self.url = url
      self.path = path
      self.size = size
      self.identity = identity
    }
  }

  /// A browser asking for the files: answered once, by ``allow()`` or ``deny()`` (a question
  /// nobody answers within ``ResourceOffer/decisionTimeout`` is denied).
  public final class Request: Sendable {
    /// Where it connects from.
    public let address: String
    /// The User-Agent it sent, as sent (escape it before showing it).
    public let userAgent: String?
    private let answer: Mutex<(@Sendable (Bool) -> Void)?>

    init(address: String, userAgent: String?, answer: @escaping @Sendable (Bool) -> Void) {
      self.address = address
      self.userAgent = userAgent
      self.answer = Mutex(answer)
    }

    /// Lets this browser download the files.
    public func allow() { respond(true) }
    /// Refuses this browser (403).
    public func deny() { respond(false) }
    /// Whether it still waits for an answer.
    public var isPending: Bool { answer.withLock { $0 != nil } }

    func respond(_ allowed: Bool) {
      let answer = self.answer.withLock { answer in
        defer { answer = nil }
        return answer
      }
      answer?(allowed)
    }
  }

  /// What browsers did with the files.
  public enum Event: Sendable {
    /// A browser was let in (its session).
    case allowed(address: String)
    /// A file went out whole to `address`.
    case downloaded(path: String, bytes: UInt64, address: String)
    /// A file's download broke off.
    case failed(path: String, reason: String, address: String)
  }

  /// Caps.
  public enum Limits {
    /// Connections at once, in all.
    public static let connections = 64
    /// Connections at once from one address.
    public static let connectionsPerAddress = 16
    /// Browsers let in (sessions) at once.
    public static let sessions = 64
    /// Questions open at once.
    public static let openQuestions = 4
    /// How long a connection may stay silent between requests (a question waited on, or a
    /// download under way, is not silence: a download has its own stall limit).
    public static let idleTimeout: Duration = .seconds(30)
  }

  let access: LocalSendWebAccess
  let gate: WebGate
  let alias: String
  let files: [SharedFile]
  /// Browsers asked about: each ``requests`` element is one.
  public let requests: AsyncStream<Request>
  let requestsContinuation: AsyncStream<Request>.Continuation
  /// What happened to the files.
  public let events: AsyncStream<Event>
  let eventsContinuation: AsyncStream<Event>.Continuation
  /// Sessions let in: id → address.
  let sessions = Mutex<[String: String]>([:])
  /// What each session downloaded whole (file indices), for the page to mark.
  private let downloaded = Mutex<[String: Set<Int>]>([:])

  /// Session `id` downloaded files `indices` whole. Any thread.
  func markDownloaded(_ indices: some Sequence<Int>, session id: String) {
    downloaded.withLock { $0[id, default: []].formUnion(indices) }
  }

  /// The files session `id` downloaded whole. Any thread.
  func downloadedFiles(session id: String) -> Set<Int> {
    downloaded.withLock { $0[id] ?? [] }
  }
  let questions = Mutex(0)
  /// Downloads under way.
  private let downloads = CountGauge()
  let connections = ConnectionSlots(
    total: Limits.connections, perAddress: Limits.connectionsPerAddress)
  private let channel = Mutex<(any Channel)?>(nil)

  /// A server offering `files` as `alias`, at `access`'s link, on `port` (0: any free one).
  public init(access: LocalSendWebAccess, alias: String, files: [SharedFile]) {
    self.access = access
    gate = WebGate(access, page: .share)
    self.alias = alias
    self.files = files
    (requests, requestsContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(16))
    (events, eventsContinuation) = AsyncStream.makeStream()
  }

  /// The port it listens on (0 before ``start(port:)``).
  public var port: UInt16 { channel.withLock { $0?.localAddress?.port.map { UInt16($0) } ?? 0 } }

  /// Listens on every address (IPv6 and IPv4) on `port`.
  ///
  /// - Throws: NIO's error when the port cannot be bound.
  @discardableResult
  public func start(port: UInt16) async throws -> UInt16 {
    let bound = try await HTTPServing.listen(port: port) { [weak self] channel in
      guard let self else { return channel.close() }
      return self.initialize(channel)
    }
    channel.withLock { $0 = bound }
    return self.port
  }

  /// Stops listening; downloads under way go on to their end.
  public func stop() {
    channel.withLock { $0 }?.close(promise: nil)
    requestsContinuation.finish()
  }

  /// Ends the events (after ``stop()``, once downloads are over).
  public func finishEvents() { eventsContinuation.finish() }

  /// How many downloads are under way (they go on after ``stop()``). Any thread.
  public var downloadsUnderWay: Int { downloads.value }

  /// Returns once no download is under way (or the task is cancelled). Any task.
  public func waitUntilNoDownloads() async { await downloads.wait() }

  func downloadStarted() { downloads.increment() }
  func downloadEnded() { downloads.decrement() }

  /// The name the whole set's zip archive is saved under: the sharer's alias's.
  var archiveName: String {
    let cleaned = alias.unicodeScalars.filter {
      $0.properties.generalCategory != .control && $0 != "/" && $0 != "\\"
    }
    let name = String(String.UnicodeScalarView(cleaned)).trimmingCharacters(in: .whitespaces)
    return "Files from \(name.isEmpty ? "Ferry" : name).zip"
  }

  /// The answer to `prepare-download`: this device and the files, by id.
  func listing(session: String) -> [UInt8] {
    var entries: [String: PrepareDownloadFile] = [:]
    for (index, file) in files.enumerated() {
      entries["f\(index)"] = PrepareDownloadFile(
        id: "f\(index)", fileName: file.path, size: Int64(file.size),
        fileType: LocalSendUpload.mimeType(file.path))
    }
    // Plain HTTP proves no key: a random fingerprint, as LocalSend's own (never the token).
    let device = LocalSendDevice(
      alias: alias, deviceModel: "Ferry", deviceType: "headless",
      fingerprint: LocalSendWebAccess.newToken(), port: Int(port), protocol: "http",
      download: true)
    return LocalSendJSON.encode(
      PrepareDownloadResponse(info: device.answer, sessionId: session, files: entries))
  }

  private func initialize(_ channel: any Channel) -> EventLoopFuture<Void> {
    let address = PeerAddress.of(channel.remoteAddress)
    guard let slot = connections.admit(channel, from: address) else { return channel.close() }
    channel.closeFuture.whenComplete { [connections] _ in connections.release(slot) }
    do {
      try HTTPServing.serve(
        channel, endpoints: WebShareEndpoints(server: self), address: address, slot: slot,
        budget: nil, limits: HTTPRequestStateMachine.Limits(), idleTimeout: Limits.idleTimeout)
      return channel.eventLoop.makeSucceededVoidFuture()
    } catch {
      return channel.close()
    }
  }
}

/// One file of `prepare-download`'s answer.
struct PrepareDownloadFile: Codable, Sendable {
  let id: String
  let fileName: String
  let size: Int64
  let fileType: String
}

/// `prepare-download`'s answer: the sharing device, the session, the files by id.
struct PrepareDownloadResponse: Codable, Sendable {
  let info: LocalSendDevice
  let sessionId: String
  let files: [String: PrepareDownloadFile]
}
