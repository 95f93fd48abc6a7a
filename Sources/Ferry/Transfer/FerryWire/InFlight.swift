import NIOCore

/// Gathers a sender's frames into batches (many small files' frames travel in one hop to the
/// event loop and one flush, i.e. one TLS record and one write(2)), and bounds the batches
/// queued but not yet seen written.
struct InFlight {
  static let limit = 8
  static let batchBytes = 256 << 10
  static let batchFrames = 128
  private var futures: [EventLoopFuture<Void>] = []
  private var batch: [WireFrame] = []
  private var bytes = 0

  mutating func add(_ frames: [WireFrame], link: ConnectionLink, channel: UInt32) async throws {
    batch += frames
    bytes += frames.reduce(0) { $0 + $1.payload.readableBytes }
    if bytes >= Self.batchBytes || batch.count >= Self.batchFrames {
      try await submit(link: link, channel: channel)
    }
  }

  /// Sends what is batched now, without waiting for it.
  mutating func submitNow(link: ConnectionLink, channel: UInt32) async throws {
    try await submit(link: link, channel: channel)
  }

  mutating func drain(link: ConnectionLink, channel: UInt32) async throws {
    try await submit(link: link, channel: channel)
    for future in futures { try await future.get() }
    futures = []
  }

  private mutating func submit(link: ConnectionLink, channel: UInt32) async throws {
    guard !batch.isEmpty else { return }
    let frames = batch
    batch = []
    bytes = 0
    futures.append(link.withMultiplexer { $0.sendResourceFrames(frames, channel: channel) })
    if futures.count > Self.limit {
      try await futures.removeFirst().get()
    }
  }
}
