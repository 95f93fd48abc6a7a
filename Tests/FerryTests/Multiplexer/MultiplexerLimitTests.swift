import FerryWire
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import Ferry

/// What a peer's frames may make a link's multiplexer hold or forward, in an EmbeddedChannel:
/// frames in the wrong direction, more than two FILE_ENDs per file, empty messages, offers withdrawn
/// while the application decides.
@Suite("Multiplexer: limits on what a peer sends")
struct MultiplexerLimitTests {
  /// A multiplexer on the advertiser's side (the peer opens odd channels), with what it reports.
  final class Link: @unchecked Sendable {
    let channel = EmbeddedChannel()
    let multiplexer = LinkMultiplexer(
      isInviter: false, budget: LinkBudget(maximumQueuedReplies: 64))
    /// What the multiplexer reported (EmbeddedChannel runs everything on this thread).
    final class Box<Value>: @unchecked Sendable {
      var value: Value
      init(_ value: Value) { self.value = value }
    }
    let violations = Box<[String]>([])
    /// Frames forwarded to offer endpoints.
    let forwarded = Box(0)

    init(limits: SessionLimits = SessionLimits()) throws {
      multiplexer.limits = limits
      multiplexer.onViolation = { [violations] reason in
        violations.value.append(reason)
      }
      try channel.pipeline.syncOperations.addHandler(multiplexer)
      channel.pipeline.fireChannelActive()
    }

    func read(_ frame: Frame) throws {
      try channel.writeInbound(WireFrame(frame, allocator: channel.allocator))
    }

    var violation: String? { violations.value.first }
    var all: [String] { violations.value }

    /// The peer offers `files` empty files on `channel`; each of its frames is counted.
    func offer(_ files: Int, channel id: UInt32 = 1) throws {
      multiplexer.onOffer = { [forwarded] _, _, _ in
        { _ in forwarded.value += 1 }
      }
      try read(
        ResourceMessage.offer(
          channel: id,
          files: (0..<files).map {
            OfferedFile(
              path: "f\($0)", size: 0, modificationSeconds: 0, modificationNanoseconds: 0,
              mode: 0o644)
          }
        ).frame)
    }
  }

  static let digest = [UInt8](repeating: 0, count: 32)

  @Test("FILE_ACK and OFFER_ACCEPT on a channel the peer opened are protocol errors")
  func answersInTheWrongDirection() throws {
    for frame in [
      ResourceMessage.fileAck(channel: 1, file: 0, .stored, reason: "").frame,
      ResourceMessage.offerAccept(channel: 1, offsets: [0]).frame,
    ] {
      let link = try Link()
      try link.offer(1)
      try link.read(frame)
      #expect(link.violation?.contains("did not offer on") == true, "\(link.all)")
      #expect(link.forwarded.value == 0)
    }
    // On a channel number nobody opened, of the peer's parity: the same.
    let link = try Link()
    try link.read(ResourceMessage.fileAck(channel: 7, file: 0, .stored, reason: "").frame)
    #expect(link.violation != nil)
  }

  @Test(
    "an XXH3 offer, a HOLE or a folder from a peer that agreed on version 2 is a protocol error; on 3 they are taken"
  )
  func digestChoiceNeedsVersion3() throws {
    let file = OfferedFile(
      path: "f", size: 0, modificationSeconds: 0, modificationNanoseconds: 0, mode: 0o644)
    for version: UInt16 in [1, 2, 3] {
      let link = try Link()
      link.multiplexer.protocolVersion = version
      let heard = Link.Box<[DigestAlgorithm]>([])
      link.multiplexer.onOffer = { _, _, digest in
        heard.value.append(digest)
        return { _ in }
      }
      try link.read(ResourceMessage.offer(channel: 1, files: [file], digest: .xxh3).frame)
      let holes = try Link()
      holes.multiplexer.protocolVersion = version
      try holes.offer(1)
      try holes.read(ResourceMessage.hole(channel: 1, file: 0, length: 5).frame)
      if version < 3 {
        #expect(holes.violation?.contains("HOLE") == true, "\(holes.all)")
      } else {
        #expect(holes.violation == nil, "\(holes.all)")
      }
      let folders = try Link()
      folders.multiplexer.protocolVersion = version
      folders.multiplexer.onOffer = { _, _, _ in { _ in } }
      var folder = file
      folder.mode = OfferedFile.folderBit | 0o755
      try folders.read(ResourceMessage.offer(channel: 1, files: [folder]).frame)
      if version < 3 {
        #expect(folders.violation?.contains("folder") == true, "\(folders.all)")
      } else {
        #expect(folders.violation == nil, "\(folders.all)")
      }
      if version < 3 {
        #expect(link.violation?.contains("digest choice") == true, "\(link.all)")
        #expect(heard.value.isEmpty)
      } else {
        #expect(link.violation == nil, "\(link.all)")
        #expect(heard.value == [.xxh3])
      }
    }
  }

  @Test("offering to a version 2 peer falls back to SHA-256, whatever was asked")
  func digestFallback() throws {
    let file = OfferedFile(
      path: "f", size: 0, modificationSeconds: 0, modificationNanoseconds: 0, mode: 0o644)
    for (version, expected): (UInt16, DigestAlgorithm) in [(2, .sha256), (3, .xxh3)] {
      let link = try Link()
      link.multiplexer.protocolVersion = version
      let opened = try link.multiplexer.openOffer([file], digest: .xxh3) { _ in }.wait()
      #expect(opened.1 == expected, "version \(version)")
    }
  }

  @Test("FILE_END on this side's own channel is a protocol error; late ones on ours are not")
  func fileEndDirection() throws {
    let link = try Link()
    // Channel 2 is this side's (even): the peer cannot end a file on it.
    try link.read(ResourceMessage.fileEnd(channel: 2, file: 0, digest: Self.digest).frame)
    #expect(link.violation?.contains("FILE_END") == true, "\(link.all)")
    // A FILE_END racing this side's RESET of the peer's offer (a channel already gone).
    let racing = try Link()
    try racing.read(ResourceMessage.fileEnd(channel: 9, file: 0, digest: Self.digest).frame)
    #expect(racing.violation == nil, "\(racing.all)")
  }

  @Test("no more than two FILE_ENDs per file (a held file's digest, then the file) are queued")
  func fileEndCount() throws {
    let link = try Link()
    try link.offer(2)
    for _ in 0..<4 {
      try link.read(ResourceMessage.fileEnd(channel: 1, file: 0, digest: Self.digest).frame)
    }
    #expect(link.violation == nil)
    try link.read(ResourceMessage.fileEnd(channel: 1, file: 0, digest: Self.digest).frame)
    #expect(link.violation?.contains("more FILE_END frames than twice the files") == true)
    #expect(link.forwarded.value == 4)
  }

  @Test("empty messages count against the unread limit: a flood of them closes the link")
  func emptyMessages() throws {
    var limits = SessionLimits()
    limits.maximumUnreadBytes = 64 << 10
    let link = try Link(limits: limits)
    let held = Link.Box(0)
    link.multiplexer.onMessage = { _ in held.value += 1 }
    for _ in 0..<10_000 where link.violation == nil {
      try link.read(Frame(type: .message))
    }
    #expect(link.violation?.contains("unread") == true, "\(link.all)")
    let kept = held.value
    #expect(kept <= (64 << 10) / SessionLimits.unreadElementCost, "\(kept) empty messages held")
  }

  @Test("offers withdrawn while the application decides still count until it lets go")
  func openQuestions() {
    let questions = OpenQuestions(limit: 2)
    let first = questions.open()
    var second = questions.open()
    #expect(first != nil && second != nil)
    #expect(questions.open() == nil, "a third question while two are held")
    first?.close()
    first?.close()  // closing twice frees one place, not two
    #expect(questions.openCount == 1)
    second = nil  // let go without an answer: released too
    #expect(questions.openCount == 0)
    _ = second
    #expect(questions.open() != nil)
  }
}
