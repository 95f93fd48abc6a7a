/// The control messages: the handshake, the verification code's nonces and liveness
/// (docs/PROTOCOL.md §4). All travel on channel 0. Encoding and decoding are pure and strict:
/// every length is capped, every byte accounted for.
package enum ControlMessage: Hashable, Sendable {
  /// The protocol versions the sender speaks and its display name.
  case hello(versions: [UInt16], displayName: String)
  /// An invitation: how long the inviter waits for an answer, the inviter's verification nonce
  /// (``nonceSize`` bytes) and the application's context.
  case invite(timeoutMilliseconds: UInt32, nonce: [UInt8], context: [UInt8])
  /// The invitation is accepted: the connection is now a session link.
  case accept
  /// The invitation is declined, with why.
  case decline(DeclineCode, reason: String)
  /// The inviter withdraws its invitation.
  case cancel
  /// Liveness probe carrying a value the answer echoes.
  case ping(UInt64)
  /// Answer to ``ping(_:)``.
  case pong(UInt64)
  /// The sender closes the connection.
  case goodbye(GoodbyeCode, reason: String)
  /// The advertiser's commitment to its verification nonce: SHA-256 of the nonce
  /// (``nonceSize`` bytes).
  case commit([UInt8])
  /// The advertiser's verification nonce (``nonceSize`` bytes), revealed after the INVITE.
  case reveal([UInt8])

  /// The largest invitation context, in bytes (64 KiB).
  package static let maximumContextSize = 64 * 1024
  /// The largest reason text, in UTF-8 bytes.
  package static let maximumReasonSize = 1024
  /// The most versions a HELLO may list.
  package static let maximumVersionCount = 16
  /// The size of a verification nonce, and of a commitment to one (SHA-256), in bytes.
  package static let nonceSize = 32

  /// Why an invitation was declined.
  package enum DeclineCode: UInt8, Hashable, Sendable {
    /// The user or application said no.
    case declined = 0
    /// Too many invitations are pending at the advertiser.
    case busy = 1
    /// The advertiser's session is full.
    case sessionFull = 2
  }

  /// Why a connection is closed.
  package enum GoodbyeCode: UInt8, Hashable, Sendable {
    /// An orderly close (disconnect).
    case normal = 0
    /// The peer sent something invalid.
    case protocolError = 1
    /// No protocol version in common.
    case unsupportedVersion = 2
    /// The handshake did not complete in time.
    case timeout = 3
    /// Another link between the same two peers takes this one's place (version 5; a peer of
    /// version 4 is told so with code 0 and the words).
    case superseded = 4
  }

  /// The frame type this message travels in.
  package var frameType: FrameType {
    switch self {
    case .hello: return .hello
    case .invite: return .invite
    case .accept: return .accept
    case .decline: return .decline
    case .cancel: return .cancel
    case .ping: return .ping
    case .pong: return .pong
    case .goodbye: return .goodbye
    case .commit: return .commit
    case .reveal: return .reveal
    }
  }

  /// The message as a frame on channel 0. Over-long reasons are truncated (at a character
  /// boundary) so that encoding cannot fail; a nonce or commitment must be ``nonceSize`` bytes
  /// (anything else is a programming error).
  package var frame: Frame {
    var payload: [UInt8] = []
    switch self {
    case .hello(let versions, let name):
      payload.appendBigEndian(UInt16(versions.count))
      for version in versions { payload.appendBigEndian(version) }
      payload.append(UInt8(name.utf8.count))
      payload += name.utf8
    case .invite(let timeout, let nonce, let context):
      precondition(nonce.count == Self.nonceSize, "a nonce is \(Self.nonceSize) bytes")
      payload.appendBigEndian(timeout)
      payload += nonce
      payload.appendBigEndian(UInt32(context.count))
      payload += context
    case .commit(let bytes), .reveal(let bytes):
      precondition(bytes.count == Self.nonceSize, "a nonce is \(Self.nonceSize) bytes")
      payload += bytes
    case .accept, .cancel:
      break
    case .decline(let code, let reason):
      payload.append(code.rawValue)
      payload.appendText(reason, maximumBytes: Self.maximumReasonSize)
    case .goodbye(let code, let reason):
      payload.append(code.rawValue)
      payload.appendText(reason, maximumBytes: Self.maximumReasonSize)
    case .ping(let value), .pong(let value):
      payload.appendBigEndian(value)
    }
    return Frame(type: frameType, channel: 0, payload: payload)
  }

  /// Decodes a control frame.
  ///
  /// - Throws: ``WireError`` when the frame is not on channel 0, a field is truncated, over its
  ///   cap or invalid (a display name that is empty, over 63 bytes, not UTF-8 or holding control
  ///   characters; unknown codes), or bytes remain after the last field.
  package init(frame: Frame) throws(WireError) {
    let type = frame.type
    guard frame.channel == 0 else { throw .invalidField(type, "channel \(frame.channel)") }
    var reader = ByteReader(frame.payload, type: type)
    switch type {
    case .hello:
      let count = Int(try reader.uint16())
      guard (1...Self.maximumVersionCount).contains(count) else {
        throw .invalidField(type, "version count \(count)")
      }
      var versions: [UInt16] = []
      for _ in 0..<count { versions.append(try reader.uint16()) }
      let nameLength = Int(try reader.uint8())
      let name = try reader.utf8(count: nameLength, field: "display name")
      guard (1...63).contains(nameLength),
        !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
      else { throw .invalidField(type, "display name") }
      self = .hello(versions: versions, displayName: name)
    case .invite:
      let timeout = try reader.uint32()
      let nonce = try reader.bytes(count: Self.nonceSize)
      let length = Int(try reader.uint32())
      guard length <= Self.maximumContextSize else {
        throw .invalidField(type, "context length \(length)")
      }
      self = .invite(
        timeoutMilliseconds: timeout, nonce: nonce, context: try reader.bytes(count: length))
    case .commit:
      self = .commit(try reader.bytes(count: Self.nonceSize))
    case .reveal:
      self = .reveal(try reader.bytes(count: Self.nonceSize))
    case .accept:
      self = .accept
    case .cancel:
      self = .cancel
    case .decline:
      let raw = try reader.uint8()
      guard let code = DeclineCode(rawValue: raw) else { throw .invalidField(type, "code \(raw)") }
      self = .decline(code, reason: try reader.reason())
    case .goodbye:
      let raw = try reader.uint8()
      guard let code = GoodbyeCode(rawValue: raw) else { throw .invalidField(type, "code \(raw)") }
      self = .goodbye(code, reason: try reader.reason())
    case .ping:
      self = .ping(try reader.uint64())
    case .pong:
      self = .pong(try reader.uint64())
    default:
      throw .unexpected(type)
    }
    try reader.finish()
  }
}
