import Crypto
import Foundation
import NIOCore
import Synchronization

/// One file to send: where it is, and its path at the receiver (relative, `/`-separated).
public struct ResourceItem: Hashable, Sendable {
  /// The file on disk.
  public var url: URL
  /// Its path under the receiver's destination.
  public var path: String

  /// A file and the path it gets at the receiver.
  public init(url: URL, path: String) {
    self.url = url
    self.path = path
  }

  /// Expands files and directories into items: a file keeps its name; a directory contributes
  /// every regular file below it as `dirname/relative/path`. Symbolic links inside directories
  /// are not followed (a file named directly is read through its link).
  ///
  /// - Throws: ``ResourceError/cannotRead(_:)`` for a missing or unreadable path.
  public static func expanding(_ urls: [URL]) throws(ResourceError) -> [ResourceItem] {
    var items: [ResourceItem] = []
    for url in urls {
      var isDirectory: ObjCBool = false
      guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
        throw .cannotRead("\(url.path): no such file or directory")
      }
      let base = url.standardizedFileURL.lastPathComponent
      guard isDirectory.boolValue else {
        items.append(ResourceItem(url: url, path: base))
        continue
      }
      guard
        let walker = FileManager.default.enumerator(
          at: url, includingPropertiesForKeys: [.isRegularFileKey, .isSymbolicLinkKey])
      else { throw .cannotRead("\(url.path): cannot list it") }
      var found: [ResourceItem] = []
      let prefix = url.standardizedFileURL.path
      for case let file as URL in walker {
        let values = try? file.resourceValues(forKeys: [.isRegularFileKey, .isSymbolicLinkKey])
        guard values?.isRegularFile == true, values?.isSymbolicLink != true else { continue }
        let relative = String(file.standardizedFileURL.path.dropFirst(prefix.count + 1))
        found.append(ResourceItem(url: file, path: base + "/" + relative))
      }
      items += found.sorted { $0.path < $1.path }
    }
    return items
  }
}

/// What happened to one sent file.
public struct FileResult: Hashable, Sendable {
  /// Its path at the receiver.
  public let path: String
  /// The receiver's verdict.
  public let status: ResourceMessage.FileStatus
  /// The receiver's reason when it is not `.stored`.
  public let reason: String
}

/// A resource (or batch) being sent: its progress, the bytes that crossed the wire, and its
/// outcome.
public final class ResourceTransfer: Sendable {
  /// The files, as offered.
  public let files: [OfferedFile]
  /// Progress (bytes sent); cancelling it cancels the transfer on both ends.
  public let progress: TransferProgress
  private let task: Task<[FileResult], any Error>
  private let offer: OutgoingOffer

  init(
    files: [OfferedFile], progress: TransferProgress, offer: OutgoingOffer,
    task: Task<[FileResult], any Error>
  ) {
    self.files = files
    self.progress = progress
    self.offer = offer
    self.task = task
  }

  /// File bytes actually sent so far (less than the total when the receiver resumed).
  public var bytesSent: UInt64 { offer.bytesSent.load(ordering: .relaxed) }

  /// Waits for the end: every file's verdict.
  ///
  /// - Throws: ``TransferError``: `.cancelledByPeer` when the receiver refused or cancelled,
  ///   `.cancelled`, `.peerDisconnected`, `.resource` when a file could not be read here or was
  ///   not stored there (corrupt, write failure).
  public func result() async throws(TransferError) -> [FileResult] {
    do {
      let results = try await task.value
      if let bad = results.first(where: { $0.status == .corrupt || $0.status == .failed }) {
        throw TransferError.resource(
          bad.status == .corrupt
            ? .integrityCheckFailed(path: bad.path)
            : .cannotWrite("\(bad.path) at the receiver: \(bad.reason)"))
      }
      return results
    } catch let error as TransferError {
      throw error
    } catch {
      throw .cancelled
    }
  }

  /// Cancels on both ends; the receiver keeps what it staged, for a resume.
  public func cancel() {
    offer.cancel()
  }
}

/// Sends one offer over a link: OFFER, then each file's chunks and FILE_END, pipelined with no
/// round trip per file, then waits for every FILE_ACK.
final class OutgoingOffer: Sendable {
  let bytesSent = Atomic<UInt64>(0)
  private let files: [OfferedFile]
  private let urls: [URL]
  private let link: ConnectionLink
  private let progress: TransferProgress
  private let state = Mutex(State())

  private struct State {
    var channel: UInt32?
    var offsets: [UInt64]?
    var acceptWaiter: CheckedContinuation<[UInt64], any Error>?
    var results: [Int: FileResult] = [:]
    var expected = 0
    var doneWaiter: CheckedContinuation<Void, any Error>?
    var failure: TransferError?
    var cancelled = false
  }

  init(files: [OfferedFile], urls: [URL], link: ConnectionLink, progress: TransferProgress) {
    self.files = files
    self.urls = urls
    self.link = link
    self.progress = progress
  }

  func run() async throws -> [FileResult] {
    let files = self.files
    let channel = try await link.withMultiplexer { [self] multiplexer in
      multiplexer.openOffer(files) { signal in
        switch signal {
        case .frame(let frame): self.answered(frame)
        case .linkClosed(let reason): self.fail(.peerDisconnected(reason: reason))
        }
      }
    }.get()
    let cancelledEarly = state.withLock { state in
      state.channel = channel
      return state.cancelled
    }
    if cancelledEarly { cancel() }
    do {
      let offsets = try await withCheckedThrowingContinuation { continuation in
        let ready = state.withLock { state -> Result<[UInt64], TransferError>? in
          if let failure = state.failure { return .failure(failure) }
          if let offsets = state.offsets { return .success(offsets) }
          state.acceptWaiter = continuation
          return nil
        }
        if let ready { continuation.resume(with: ready) }
      }
      for (index, offset) in offsets.enumerated() where offset == ResourceMessage.skip {
        progress.complete(index)
        state.withLock {
          $0.results[index] = FileResult(path: files[index].path, status: .skipped, reason: "")
        }
      }
      state.withLock { $0.expected = offsets.filter { $0 != ResourceMessage.skip }.count }
      for (index, offset) in offsets.enumerated() where offset != ResourceMessage.skip {
        try await send(index, from: offset, channel: channel)
      }
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        let ready = state.withLock { state -> Result<Void, TransferError>? in
          if let failure = state.failure { return .failure(failure) }
          if state.results.count == files.count { return .success(()) }
          state.doneWaiter = continuation
          return nil
        }
        if let ready { continuation.resume(with: ready) }
      }
    } catch {
      let transferError = (error as? TransferError) ?? .peerDisconnected(reason: "\(error)")
      abandon(channel: channel, transferError)
      progress.finish()
      throw transferError
    }
    link.onMultiplexer { $0.closeOffer(channel: channel) }
    progress.finish()
    return state.withLock { state in (0..<files.count).compactMap { state.results[$0] } }
  }

  func cancel() {
    let channel = state.withLock { state -> UInt32? in
      state.cancelled = true
      return state.channel
    }
    guard let channel else { return }
    fail(.cancelled)
    abandon(channel: channel, .cancelled)
  }

  /// Reads, hashes and sends file `index` from `offset` (hashing the bytes before it too).
  private func send(_ index: Int, from offset: UInt64, channel: UInt32) async throws {
    let file = files[index]
    let fd = open(urls[index].path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
      throw TransferError.resource(.cannotRead("\(urls[index].path): \(errnoText())"))
    }
    defer { close(fd) }
    var hasher = SHA256()
    var position: UInt64 = 0
    let chunkSize = TransferMessage.maximumChunkSize
    let allocator = link.channel.allocator
    while position < offset {
      var buffer = allocator.buffer(capacity: chunkSize)
      let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: chunkSize) { pointer in
        max(
          0,
          pread(
            fd, pointer.baseAddress, Int(min(UInt64(chunkSize), offset - position)), off_t(position)
          ))
      }
      guard count > 0 else { break }
      buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
      position += UInt64(count)
    }
    progress.advance(index, to: position)
    while true {
      if let failure = state.withLock({ $0.failure }) { throw failure }
      // Sized to what is left: a 1 KiB file must not cost a 256 KiB allocation.
      let want = Int(min(UInt64(chunkSize), max(file.size, position + 1) - position))
      var buffer = allocator.buffer(capacity: 4 + want)
      buffer.writeInteger(UInt32(index))
      var readError: Int32 = 0
      let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { pointer in
        let result = pread(fd, pointer.baseAddress, min(want, pointer.count), off_t(position))
        if result < 0 { readError = errno }
        return max(0, result)
      }
      guard readError == 0 else {
        throw TransferError.resource(
          .cannotRead("\(urls[index].path): \(String(cString: strerror(readError)))"))
      }
      if count == 0 { break }
      buffer.withUnsafeReadableBytes {
        hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[4...]))
      }
      position += UInt64(count)
      let frame = WireFrame(type: .chunk, channel: channel, payload: buffer)
      try await link.withMultiplexer { $0.sendResourceFrame(frame, channel: channel) }.get()
      bytesSent.add(UInt64(count), ordering: .relaxed)
      progress.advance(index, to: min(position, file.size))
    }
    let end = ResourceMessage.fileEnd(
      channel: channel, file: UInt32(index), sha256: Array(hasher.finalize())
    ).frame
    let endFrame = WireFrame(
      type: .fileEnd, channel: channel, payload: allocator.buffer(bytes: end.payload))
    try await link.withMultiplexer { $0.sendResourceFrame(endFrame, channel: channel) }.get()
  }

  /// A frame from the receiver (on the loop).
  private func answered(_ frame: WireFrame) {
    switch frame.type {
    case .offerAccept:
      guard case .offerAccept(_, let offsets)? = try? ResourceMessage(frame: frame.flat),
        offsets.count == files.count,
        zip(offsets, files).allSatisfy({ $0 == ResourceMessage.skip || $0 <= $1.size })
      else { return fail(.peerDisconnected(reason: "the receiver answered the offer wrongly")) }
      let waiter = state.withLock { state in
        state.offsets = offsets
        defer { state.acceptWaiter = nil }
        return state.acceptWaiter
      }
      waiter?.resume(returning: offsets)
    case .fileAck:
      guard
        case .fileAck(_, let file, let status, let reason)? = try? ResourceMessage(
          frame: frame.flat),
        Int(file) < files.count
      else { return }
      progress.complete(Int(file))
      let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
        state.results[Int(file)] = FileResult(
          path: files[Int(file)].path, status: status, reason: reason)
        guard state.results.count == files.count else { return nil }
        defer { state.doneWaiter = nil }
        return state.doneWaiter
      }
      waiter?.resume()
    case .reset:
      var reason = ""
      if case .reset(_, _, let text)? = try? TransferMessage(frame: frame.flat) { reason = text }
      fail(.cancelledByPeer(reason: reason))
    default:
      break
    }
  }

  private func fail(_ error: TransferError) {
    let (accept, done) = state.withLock { state in
      if state.failure == nil { state.failure = error }
      defer {
        state.acceptWaiter = nil
        state.doneWaiter = nil
      }
      return (state.acceptWaiter, state.doneWaiter)
    }
    accept?.resume(throwing: error)
    done?.resume(throwing: error)
  }

  private func abandon(channel: UInt32, _ error: TransferError) {
    switch error {
    case .cancelledByPeer, .peerDisconnected:
      link.onMultiplexer { $0.closeOffer(channel: channel) }
    default:
      let code: TransferMessage.ResetCode = error == .cancelled ? .cancelled : .failed
      link.onMultiplexer {
        $0.answerOffer(
          TransferMessage.reset(channel: channel, code, reason: error.description).frame)
        $0.closeOffer(channel: channel)
      }
    }
  }
}
