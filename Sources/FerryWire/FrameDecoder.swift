/// Splits a byte stream into frames. Pure: feed it bytes with ``append(_:)`` and take frames
/// with ``next()``; it never does I/O. The first error leaves it failed: the connection must be
/// closed, since the stream can no longer be trusted.
package struct FrameDecoder: Sendable {
  private var buffer: [UInt8] = []
  private var start = 0
  private var failure: WireError?

  /// Creates an empty decoder.
  package init() {}

  /// Adds received bytes.
  package mutating func append<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
    if start > 0 && start >= buffer.count / 2 {
      buffer.removeFirst(start)
      start = 0
    }
    buffer.append(contentsOf: bytes)
  }

  /// The next complete frame, or nil when more bytes are needed.
  ///
  /// - Throws: ``WireError`` when the bytes are not a valid frame; every later call throws it
  ///   again.
  package mutating func next() throws(WireError) -> Frame? {
    if let failure { throw failure }
    do {
      let available = buffer[start...]
      guard let header = try FrameHeader.parse(available) else { return nil }
      let total = Frame.headerSize + header.payloadSize
      guard available.count >= total else { return nil }
      let payloadStart = start + Frame.headerSize
      let frame = Frame(
        type: header.type, channel: header.channel,
        payload: Array(buffer[payloadStart..<(payloadStart + header.payloadSize)]))
      start += total
      return frame
    } catch {
      failure = error
      throw error
    }
  }
}
