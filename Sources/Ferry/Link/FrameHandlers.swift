internal import FerryWire
import NIOCore

/// A frame inside the NIO pipeline: the payload stays a `ByteBuffer` slice of what was read,
/// so bulk payloads are never copied by the framing.
struct WireFrame {
  var type: FrameType
  var channel: UInt32
  var payload: ByteBuffer

  /// A pure ``Frame`` as a pipeline frame.
  init(_ frame: Frame, allocator: ByteBufferAllocator) {
    self.type = frame.type
    self.channel = frame.channel
    self.payload = allocator.buffer(bytes: frame.payload)
  }

  /// The frame of a control message.
  init(_ message: ControlMessage, allocator: ByteBufferAllocator) {
    self.init(message.frame, allocator: allocator)
  }

  init(type: FrameType, channel: UInt32, payload: ByteBuffer) {
    self.type = type
    self.channel = channel
    self.payload = payload
  }

  /// The frame with its payload copied out, for the pure decoders.
  var flat: Frame {
    Frame(type: type, channel: channel, payload: Array(payload.readableBytesView))
  }

  /// Decodes the frame as a control message.
  ///
  /// - Throws: ``WireError`` when it is not a valid control message.
  func controlMessage() throws(WireError) -> ControlMessage {
    try ControlMessage(frame: flat)
  }
}

/// Splits the decrypted byte stream into ``WireFrame``s using the pure ``FrameHeader`` parser.
/// A malformed header throws ``WireError``, which reaches the connection handler as an error
/// and closes that connection. Until the link is connected only control frames are allowed, so
/// a session frame (a 16 MiB OFFER, say) is refused from its header before its payload is
/// buffered.
struct FrameDecoderHandler: ByteToMessageDecoder {
  typealias InboundOut = WireFrame

  /// The connection's shared state (event loop only).
  let budget: LinkBudget

  mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws
    -> DecodingState
  {
    let parsed = try buffer.withUnsafeReadableBytes { bytes throws(WireError) in
      try FrameHeader.parse(bytes)
    }
    guard let header = parsed else { return .needMoreData }
    guard header.type.isControl || budget.connected else { throw WireError.unexpected(header.type) }
    guard buffer.readableBytes >= Frame.headerSize + header.payloadSize else {
      return .needMoreData
    }
    buffer.moveReaderIndex(forwardBy: Frame.headerSize)
    let payload = buffer.readSlice(length: header.payloadSize)!
    context.fireChannelRead(
      wrapInboundOut(WireFrame(type: header.type, channel: header.channel, payload: payload)))
    return .continue
  }

  mutating func decodeLast(
    context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
  ) throws -> DecodingState {
    while try decode(context: context, buffer: &buffer) == .continue {}
    buffer.moveReaderIndex(to: buffer.writerIndex)
    return .needMoreData
  }
}

/// Writes ``WireFrame``s: the 9-byte header, then the payload buffer as it is (no copy).
final class FrameEncoderHandler: ChannelOutboundHandler {
  typealias OutboundIn = WireFrame
  typealias OutboundOut = ByteBuffer

  func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
    let frame = unwrapOutboundIn(data)
    let header = context.channel.allocator.buffer(
      bytes: Frame.header(
        type: frame.type, channel: frame.channel, payloadSize: frame.payload.readableBytes))
    if frame.payload.readableBytes == 0 {
      context.write(wrapOutboundOut(header), promise: promise)
    } else {
      context.write(wrapOutboundOut(header), promise: nil)
      context.write(wrapOutboundOut(frame.payload), promise: promise)
    }
  }
}
