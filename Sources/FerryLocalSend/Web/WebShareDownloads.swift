import Ferry
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

extension WebShareEndpoints {
  /// The bytes handed to `sendfile(2)` at once: each one written is progress.
  static let piece = 1 << 20

  /// `download?sessionId=&fileId=`: one file, by `sendfile(2)`, once its session is this
  /// address's and the file is still the one offered (its device, inode and size).
  func download(_ query: [String: String], _ request: HTTPRequest, reply: HTTPReply) {
    guard let session = query["sessionId"], isOwn(session, request.address) else {
      return reply(.text(.forbidden, "not allowed"))
    }
    guard let id = query["fileId"], id.hasPrefix("f"), let index = Int(id.dropFirst()),
      server.files.indices.contains(index)
    else {
      return reply(.text(.notFound, "no such file"))
    }
    let file = server.files[index]
    guard let fd = Self.openOffered(file) else {
      return reply(.text(.conflict, "the file changed since it was offered"))
    }
    let (server, address) = (self.server, request.address)
    reply.respond { channel, done in
      let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: fd)
      let progress = DownloadProgress()
      // Checked every second: a file cut short while it goes out (sendfile(2) would have
      // nothing to send and the loop would spin), or a browser that reads nothing for
      // ``stall`` — its silence never holds the download (or the end of an expired link) open.
      let watch = channel.eventLoop.scheduleRepeatedTask(
        initialDelay: .seconds(1), delay: .seconds(1)
      ) { _ in
        var now = stat()
        if fstat(fd, &now) != 0 || UInt64(now.st_size) < file.size || progress.stalled {
          channel.close(promise: nil)
        }
      }
      server.downloadStarted()
      var headers = HTTPHeaders()
      headers.add(name: "content-type", value: "application/octet-stream")
      headers.add(name: "content-length", value: "\(file.size)")
      headers.add(name: "content-disposition", value: Self.disposition(Self.savedName(file.path)))
      for (name, value) in WebPage.securityHeaders { headers.add(name: name, value: value) }
      channel.write(
        HTTPServerResponsePart.head(
          HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)), promise: nil)
      let sent = channel.eventLoop.makePromise(of: Void.self)
      Self.send(handle, from: 0, to: Int(file.size), on: channel, progress: progress, then: sent)
      sent.futureResult.whenComplete { result in
        watch.cancel()
        try? handle.close()
        server.downloadEnded()
        switch result {
        case .success:
          server.markDownloaded([index], session: session)
          server.eventsContinuation.yield(
            .downloaded(path: file.path, bytes: file.size, address: address))
          done(false)
        case .failure(let error):
          server.eventsContinuation.yield(
            .failed(path: file.path, reason: ErrorWords.describe(error), address: address))
          done(true)
        }
      }
    }
  }

  /// Sends bytes `offset..<end` of `handle` by `sendfile(2)`, a ``piece`` at a time — each
  /// written one is progress — then the answer's end; `done` ends with it.
  private static func send(
    _ handle: NIOFileHandle, from offset: Int, to end: Int, on channel: any Channel,
    progress: DownloadProgress, then done: EventLoopPromise<Void>
  ) {
    guard offset < end else {
      return channel.writeAndFlush(HTTPServerResponsePart.end(nil), promise: done)
    }
    let next = min(end, offset + piece)
    let region = FileRegion(fileHandle: handle, readerIndex: offset, endIndex: next)
    channel.writeAndFlush(HTTPServerResponsePart.body(.fileRegion(region))).whenComplete {
      result in
      switch result {
      case .success:
        progress.wrote()
        send(handle, from: next, to: end, on: channel, progress: progress, then: done)
      case .failure(let error):
        done.fail(error)
      }
    }
  }

  /// Opens offered `file` for reading: never blocking the event loop (a FIFO put in its place),
  /// never following a link put there, and only if it is still the file offered (its device
  /// and inode) and as large; nil otherwise.
  static func openOffered(_ file: WebShareServer.SharedFile) -> Int32? {
    let fd = open(file.url.path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
    guard fd >= 0 else { return nil }
    var info = stat()
    guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG,
      UInt64(info.st_size) == file.size,
      file.identity.map({ $0 == (UInt64(info.st_dev), UInt64(info.st_ino)) }) ?? true
    else {
      close(fd)
      return nil
    }
    return fd
  }

  /// The name a browser saves offered `path` under: its folders kept in it, joined by " - "
  /// (a browser saves one name, no folders), so that `photos/a.jpg` and `photos/2024/a.jpg`
  /// are two files.
  static func savedName(_ path: String) -> String {
    path.split(separator: "/").joined(separator: " - ")
  }

  /// `attachment` named `name`: an ASCII fallback (`filename`) and the UTF-8 name
  /// (`filename*`, RFC 6266), percent-encoded byte by byte.
  static func disposition(_ name: String) -> String {
    let name = name.isEmpty ? "file" : name
    let ascii = String(
      name.unicodeScalars.map {
        $0.isASCII && $0.value >= 0x20 && $0 != "\"" && $0 != "\\" && $0.value != 0x7F
          ? Character($0) : "_"
      })
    var encoded = ""
    for byte in name.utf8 {
      let safe =
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A)
        || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x2E || byte == 0x5F
      encoded += safe ? String(UnicodeScalar(byte)) : "%" + Hex.uppercase(CollectionOfOne(byte))
    }
    return "attachment; filename=\"\(ascii)\"; filename*=UTF-8''\(encoded)"
  }
}

/// When a download last had a piece written: one that goes ``WebShareEndpoints/stall``
/// without one is stalled. Any thread.
final class DownloadProgress: Sendable {
  private let last = Mutex(ContinuousClock.now)

  /// A piece was written.
  func wrote() { last.withLock { $0 = .now } }

  /// Whether nothing was written for ``WebShareEndpoints/stall``.
  var stalled: Bool { last.withLock { ContinuousClock.now - $0 > WebShareEndpoints.stall } }
}
