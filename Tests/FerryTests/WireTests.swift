import FerryWire
import Testing

@testable import Ferry

@Suite("Wire: frames and control messages")
struct WireTests {
  static let messages: [ControlMessage] = [
    .hello(versions: [1], displayName: "alice"),
    .hello(versions: [4, 3, 2, 1], displayName: "Zoë 日本"),
    .invite(timeoutMilliseconds: 30_000, nonce: Array(repeating: 0, count: 32), context: []),
    .invite(
      timeoutMilliseconds: 1, nonce: Array(0..<32),
      context: Array(repeating: 7, count: ControlMessage.maximumContextSize)),
    .commit(Array(repeating: 0xC0, count: 32)),
    .reveal(Array(repeating: 0x5E, count: 32)),
    .accept,
    .decline(.declined, reason: "not now"),
    .decline(.busy, reason: ""),
    .decline(.sessionFull, reason: "full"),
    .cancel,
    .ping(0),
    .pong(.max),
    .goodbye(.protocolError, reason: "bad frame"),
  ]

  @Test("every control message round-trips through bytes", arguments: messages)
  func roundTrip(message: ControlMessage) throws {
    var decoder = FrameDecoder()
    decoder.append(message.frame.encoded)
    let frame = try #require(try decoder.next())
    #expect(try ControlMessage(frame: frame) == message)
    #expect(try decoder.next() == nil)
  }

  @Test("the header layout is the documented one")
  func layout() {
    let bytes = ControlMessage.ping(0x0102_0304_0506_0708).frame.encoded
    #expect(bytes == [0, 0, 0, 13, 0x06, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8])
    let hello = ControlMessage.hello(versions: [1], displayName: "a").frame.encoded
    #expect(hello == [0, 0, 0, 11, 0x01, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0x61])
    // INVITE: timeout, the 32-byte nonce, then the context with its length.
    let nonce = [UInt8](0..<32)
    let invite = ControlMessage.invite(timeoutMilliseconds: 258, nonce: nonce, context: [9])
      .frame.encoded
    #expect(invite == [0, 0, 0, 46, 0x02, 0, 0, 0, 0, 0, 0, 1, 2] + nonce + [0, 0, 0, 1, 9])
    #expect(
      ControlMessage.commit(nonce).frame.encoded == [0, 0, 0, 37, 0x09, 0, 0, 0, 0] + nonce)
    #expect(
      ControlMessage.reveal(nonce).frame.encoded == [0, 0, 0, 37, 0x0A, 0, 0, 0, 0] + nonce)
  }

  @Test("frames split at every byte boundary decode the same")
  func splitting() throws {
    let stream = Self.messages.prefix(3).flatMap { $0.frame.encoded }
    for split in 0...stream.count {
      var decoder = FrameDecoder()
      var frames: [Frame] = []
      decoder.append(stream[..<split])
      while let frame = try decoder.next() { frames.append(frame) }
      decoder.append(stream[split...])
      while let frame = try decoder.next() { frames.append(frame) }
      #expect(frames == Self.messages.prefix(3).map(\.frame))
    }
  }

  @Test("malformed headers are rejected before the payload arrives")
  func badHeaders() throws {
    #expect(throws: WireError.lengthTooSmall(4)) {
      try FrameHeader.parse([0, 0, 0, 4, 1, 0, 0, 0, 0])
    }
    #expect(throws: WireError.unknownFrameType(0x7F)) {
      try FrameHeader.parse([0, 0, 0, 5, 0x7F, 0, 0, 0, 0])
    }
    // A 4 GiB INVITE is refused from its header alone.
    #expect(throws: WireError.self) {
      try FrameHeader.parse([0xFF, 0xFF, 0xFF, 0xFF, 2, 0, 0, 0, 0])
    }
    #expect(throws: WireError.self) {
      try FrameHeader.parse([0, 0, 0, 6, 0x03, 0, 0, 0, 0])  // ACCEPT with a payload byte
    }
    #expect(try FrameHeader.parse([0, 0, 0]) == nil)
  }

  @Test("a failed decoder stays failed")
  func stickyFailure() {
    var decoder = FrameDecoder()
    decoder.append([0, 0, 0, 5, 0x7F, 0, 0, 0, 0])
    #expect(throws: WireError.unknownFrameType(0x7F)) { try decoder.next() }
    decoder.append(ControlMessage.accept.frame.encoded)
    #expect(throws: WireError.unknownFrameType(0x7F)) { try decoder.next() }
  }

  @Test(
    "malformed payloads are typed errors",
    arguments: [
      (Frame(type: .hello, payload: [0, 0, 1, 0x61]), "zero versions"),
      (Frame(type: .hello, payload: [0, 1, 0, 1, 0]), "empty name"),
      (Frame(type: .hello, payload: [0, 1, 0, 1, 2, 0x61]), "truncated name"),
      (Frame(type: .hello, payload: [0, 1, 0, 1, 1, 0xFF]), "invalid UTF-8"),
      (Frame(type: .hello, payload: [0, 1, 0, 1, 1, 0x0A]), "control character"),
      (Frame(type: .hello, payload: [0, 1, 0, 1, 1, 0x61, 0]), "trailing byte"),
      (
        Frame(
          type: .invite, payload: [0, 0, 0, 1] + Array(repeating: 0, count: 32) + [0, 1, 0, 1]),
        "context over 64 KiB"
      ),
      (Frame(type: .invite, payload: [0, 0, 0, 1, 0, 0, 0, 0]), "no nonce"),
      (Frame(type: .commit, payload: Array(repeating: 0, count: 31)), "short commitment"),
      (Frame(type: .reveal, payload: Array(repeating: 0, count: 33)), "long nonce"),
      (Frame(type: .decline, payload: [9, 0, 0]), "unknown code"),
      (Frame(type: .goodbye, payload: [0, 0x04, 0x01]), "reason over 1024 bytes"),
      (Frame(type: .ping, payload: [1, 2, 3]), "short ping"),
      (Frame(type: .accept, channel: 5), "control frame on a channel"),
    ])
  func badPayloads(frame: Frame, what: String) {
    #expect(throws: WireError.self, "\(what)") { try ControlMessage(frame: frame) }
  }

  @Test("version negotiation takes the highest common version, or none")
  func negotiation() {
    #expect(WireProtocol.negotiate(ours: [1], theirs: [1]) == 1)
    #expect(WireProtocol.negotiate(ours: [1, 2], theirs: [2, 3]) == 2)
    #expect(WireProtocol.negotiate(ours: [1], theirs: [2, 3]) == nil)
  }
}
