import FerryWire
import Testing

/// OFFER_ACCEPT's held files (docs/PROTOCOL.md, "Resources"): optional, in increasing order,
/// within the offer, only on files sent from 0; and FILE_ACK's `identical` and `differs`.
@Suite("Wire: held files")
struct HeldFilesWireTests {
  /// An OFFER_ACCEPT payload: `count`, the offsets, then (when given) the held section as is.
  func accept(_ offsets: [UInt64], heldCount: UInt32? = nil, held: [UInt32] = []) -> Frame {
    var payload: [UInt8] = []
    payload.appendBigEndian(UInt32(offsets.count))
    for offset in offsets { payload.appendBigEndian(offset) }
    if let heldCount {
      payload.appendBigEndian(heldCount)
      for file in held { payload.appendBigEndian(file) }
    }
    return Frame(type: .offerAccept, channel: 1, payload: payload)
  }

  @Test("held files round-trip; an OFFER_ACCEPT without them holds none")
  func roundTrip() throws {
    let message = ResourceMessage.offerAccept(channel: 1, offsets: [0, 5, 0], held: [0, 2])
    #expect(try ResourceMessage(frame: message.frame) == message)
    #expect(
      try ResourceMessage(frame: accept([0, 5]))
        == .offerAccept(channel: 1, offsets: [0, 5], held: []))
    #expect(ResourceMessage.offerAccept(channel: 1, offsets: [0]).frame.payload.count == 12)
  }

  /// Held sections no receiver may send, for an offer of three files: offsets 0, 5 and skip.
  static let invalidHeld: [(count: UInt32, held: [UInt32])] = [
    (2, [2, 0]),  // out of order
    (2, [0, 0]),  // repeated
    (1, [3]),  // beyond the offer
    (1, [1]),  // a resumed file (offset 5)
    (1, [2]),  // a skipped file
    (0, []),  // an empty list written out
    (4, [0, 1, 2, 3]),  // more than the files
    (2, [0]),  // truncated
  ]

  @Test(
    "held files out of order, repeated, beyond the offer, resumed or skipped, or miscounted are protocol errors"
  )
  func invalid() {
    for (count, held) in Self.invalidHeld {
      #expect(throws: WireError.self, "\(count) \(held)") {
        try ResourceMessage(frame: accept([0, 5, .max], heldCount: count, held: held))
      }
    }
  }

  @Test("FILE_ACK carries identical (4) and differs (5); 6 is unknown")
  func statuses() throws {
    for status in [ResourceMessage.FileStatus.identical, .differs] {
      let ack = ResourceMessage.fileAck(channel: 1, file: 0, status, reason: "")
      #expect(try ResourceMessage(frame: ack.frame) == ack)
    }
    var payload: [UInt8] = [0, 0, 0, 0, 6, 0, 0]
    #expect(throws: WireError.self) {
      try ResourceMessage(frame: Frame(type: .fileAck, channel: 1, payload: payload))
    }
    payload[4] = 5
    _ = try ResourceMessage(frame: Frame(type: .fileAck, channel: 1, payload: payload))
  }

  @Test("the largest OFFER_ACCEPT (every file held) fits its type's cap")
  func cap() {
    let count = ResourceMessage.maximumFiles
    let message = ResourceMessage.offerAccept(
      channel: 1, offsets: Array(repeating: 0, count: count), held: (0..<UInt32(count)).map { $0 })
    #expect(message.frame.payload.count == FrameType.offerAccept.maximumPayloadSize)
  }
}
