import Dispatch
import Ferry
import Foundation
import NIOCore
import NIOHTTP1

extension WebShareEndpoints {
  /// `download-all?sessionId=`: every file offered in one zip archive (``ZipStream``), its
  /// length known before the first byte (the browser shows its progress), each file read as it
  /// goes out — on a queue of its own, a MiB at a time, each piece written before the next is
  /// read — and checked as a single download is (still the file offered, and as large). A file
  /// that changed, or a browser that reads nothing for ``stall``, ends it (the archive is then
  /// cut short, and the browser says the download failed).
  func downloadAll(_ query: [String: String], _ request: HTTPRequest, reply: HTTPReply) {
    guard let session = query["sessionId"], isOwn(session, request.address) else {
      return reply(.text(.forbidden, "not allowed"))
    }
    let (server, address) = (self.server, request.address)
    let files = server.files
    // The archive's length: the same records with any CRC (it changes no length).
    var dry = ZipStream()
    for file in files {
      _ = dry.header(path: file.path, size: file.size, modified: 0)
      _ = dry.descriptor(crc: 0)
    }
    _ = dry.end()
    let length = dry.written
    reply.respond { channel, done in
      var headers = HTTPHeaders()
      headers.add(name: "content-type", value: "application/zip")
      headers.add(name: "content-length", value: "\(length)")
      headers.add(name: "content-disposition", value: Self.disposition(server.archiveName))
      for (name, value) in WebPage.securityHeaders { headers.add(name: name, value: value) }
      server.downloadStarted()
      channel.write(
        HTTPServerResponsePart.head(
          HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)), promise: nil)
      let progress = DownloadProgress()
      let watch = channel.eventLoop.scheduleRepeatedTask(
        initialDelay: .seconds(1), delay: .seconds(1)
      ) { _ in
        if progress.stalled { channel.close(promise: nil) }
      }
      let archive = ArchiveSender(files: files, channel: channel, progress: progress)
      archive.start { outcome in
        watch.cancel()
        server.downloadEnded()
        switch outcome {
        case .success:
          server.markDownloaded(files.indices, session: session)
          for file in files {
            server.eventsContinuation.yield(
              .downloaded(path: file.path, bytes: file.size, address: address))
          }
          done(false)
        case .failure(let error):
          server.eventsContinuation.yield(
            .failed(
              path: "all files (zip)", reason: ErrorWords.describe(error), address: address))
          done(true)
        }
      }
    }
  }
}

/// A file of a zip archive could not be sent as it was offered.
struct ArchiveFileChanged: Error, CustomStringConvertible {
  let path: String
  var description: String { "\(path) changed since it was offered" }
}

/// Streams the archive: each file's header, its bytes (read on ``queue``, a MiB at a time,
/// with their CRC-32), its descriptor, then the central directory — each piece written before
/// the next is read, so that at most one MiB is in memory whatever the browser's pace.
private final class ArchiveSender: @unchecked Sendable {
  static let chunk = 1 << 20
  let files: [WebShareServer.SharedFile]
  let channel: any Channel
  let progress: DownloadProgress
  /// Reads files off the event loop.
  let queue = DispatchQueue(label: "ferry.web.archive")
  /// The records made so far (touched on the event loop only).
  var zip = ZipStream()
  var done: (@Sendable (Result<Void, Error>) -> Void)?

  init(files: [WebShareServer.SharedFile], channel: any Channel, progress: DownloadProgress) {
    self.files = files
    self.channel = channel
    self.progress = progress
  }

  /// Starts with the first file; `done` is called once, on the event loop.
  func start(done: @escaping @Sendable (Result<Void, Error>) -> Void) {
    self.done = done
    send(file: 0)
  }

  private func end(_ result: Result<Void, Error>) {
    let done = self.done
    self.done = nil
    done?(result)
  }

  /// File `index` (or the end, past the last): on the event loop.
  private func send(file index: Int) {
    guard index < files.count else {
      return write(zip.end()) { [self] result in
        guard case .success = result else { return end(result) }
        finish { [self] result in end(result) }
      }
    }
    let file = files[index]
    queue.async { [self] in
      guard let fd = WebShareEndpoints.openOffered(file) else {
        return channel.eventLoop.execute { [self] in
          end(.failure(ArchiveFileChanged(path: file.path)))
        }
      }
      var info = stat()
      let modified = fstat(fd, &info) == 0 ? Int64(info.st_mtim.tv_sec) : 0
      channel.eventLoop.execute { [self] in
        let header = zip.header(path: file.path, size: file.size, modified: modified)
        write(header) { [self] result in
          guard case .success = result else {
            close(fd)
            return end(result)
          }
          read(fd, file: file, index: index, from: 0, crc: 0)
        }
      }
    }
  }

  /// Reads and sends `file`'s bytes from `offset`, then its descriptor.
  private func read(
    _ fd: Int32, file: WebShareServer.SharedFile, index: Int, from offset: UInt64, crc: UInt32
  ) {
    queue.async { [self] in
      guard offset < file.size else {
        close(fd)
        return channel.eventLoop.execute { [self] in
          write(zip.descriptor(crc: crc)) { [self] result in
            guard case .success = result else { return end(result) }
            send(file: index + 1)
          }
        }
      }
      let wanted = Int(min(UInt64(Self.chunk), file.size - offset))
      var bytes = [UInt8](repeating: 0, count: wanted)
      var got = 0
      while got < wanted {
        let count = bytes.withUnsafeMutableBytes {
          pread(fd, $0.baseAddress! + got, wanted - got, off_t(offset) + off_t(got))
        }
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { break }
        got += count
      }
      guard got == wanted else {
        // Shorter than offered: cut short rather than padded.
        close(fd)
        return channel.eventLoop.execute { [self] in
          end(.failure(ArchiveFileChanged(path: file.path)))
        }
      }
      let next = bytes.withUnsafeBytes { ZipStream.crc32(crc, $0) }
      let piece = bytes
      channel.eventLoop.execute { [self] in
        write(piece) { [self] result in
          guard case .success = result else {
            close(fd)
            return end(result)
          }
          read(fd, file: file, index: index, from: offset + UInt64(wanted), crc: next)
        }
      }
    }
  }

  /// A piece of the archive's output: written once the one before it is.
  private func write(_ bytes: [UInt8], then: @escaping @Sendable (Result<Void, Error>) -> Void) {
    let buffer = channel.allocator.buffer(bytes: bytes)
    channel.writeAndFlush(HTTPServerResponsePart.body(.byteBuffer(buffer))).whenComplete {
      [progress] result in
      if case .success = result { progress.wrote() }
      then(result.mapError { $0 })
    }
  }

  /// The response's end, written after the archive's last bytes.
  private func finish(then: @escaping @Sendable (Result<Void, Error>) -> Void) {
    channel.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete {
      then($0.mapError { $0 })
    }
  }
}
