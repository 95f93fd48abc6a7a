// ferry-state-fuzz: arbitrary frame sequences driven into a connected link's state machines —
// the connection handler, the multiplexer (flow control, streams, limits) and incoming offers
// (paths, staging, placement on a real disk) — in-process, through an EmbeddedChannel. Nothing
// may trap, and nothing may be written outside the destination.
//
// Built by scripts/fuzz with FERRY_FUZZ=1 (libFuzzer, coverage-guided: LLVMFuzzerRunDriver);
// in an ordinary build it is a random driver: `ferry-state-fuzz SECONDS [SEED]`. It drives
// Ferry's internals (`@testable import`), which only a debug build exposes: a release build
// (README's `swift build -c release`) makes a program that says so and exits 2.

#if DEBUG
  import Crypto
  import FerryWire
  import Foundation
  import NIOCore
  import NIOEmbedded

  @testable import Ferry

  /// Runs incoming offers' work on the fuzzing thread; delayed work waits for ``runLater()``.
  final class InlineExecutor: OfferExecutor, @unchecked Sendable {
    static let shared = InlineExecutor()
    private var later: [@Sendable () -> Void] = []

    func run(_ work: @escaping @Sendable () -> Void) { work() }

    func run(after delay: Duration, _ work: @escaping @Sendable () -> Void) { later.append(work) }

    func runLater() {
      for _ in 0..<4 where !later.isEmpty {
        let due = later
        later = []
        for work in due { work() }
      }
    }

    func discard() { later = [] }
  }

  /// The fuzzer's input, read as a program of operations.
  struct Input {
    let bytes: [UInt8]
    var position = 0

    mutating func byte() -> UInt8? {
      guard position < bytes.count else { return nil }
      defer { position += 1 }
      return bytes[position]
    }

    mutating func number(_ limit: Int) -> Int {
      let high = Int(byte() ?? 0)
      let low = Int(byte() ?? 0)
      return (high << 8 | low) % max(1, limit)
    }

    mutating func take(_ count: Int) -> [UInt8] {
      let end = min(bytes.count, position + count)
      defer { position = end }
      return Array(bytes[position..<end])
    }
  }

  let identity = Identity.generate()
  let remote = try! PeerID(displayName: "fuzzer", fingerprint: Identity.generate().fingerprint)
  let scratch: URL = {
    let base =
      FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
    return URL(fileURLWithPath: base).appendingPathComponent("ferry-state-fuzz-\(getpid())")
  }()
  let destination = scratch.appendingPathComponent("dest")

  /// Names an offer may carry: safe ones, hostile ones, Unicode tricks.
  let pathDictionary: [[UInt8]] = [
    "a", "b/c", "b/d", "../x", "a/../../x", ".ferry-partial/y", ".FERRY-PARTIAL", "caf\u{E9}",
    "cafe\u{301}", "../\u{301}x", "x\u{202E}y", "/abs", "", ".", "d/..", "..\u{FF0F}x", "a/b/c/d",
    "link/x", "\u{1B}[2J",
  ].map { Array($0.utf8) }

  func frame(_ type: UInt8, _ channel: UInt32, _ payload: [UInt8]) -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.appendBigEndian(UInt32(payload.count + 5))
    bytes.append(type)
    bytes.appendBigEndian(channel)
    return bytes + payload
  }

  /// One fuzz input against a fresh session, channel and destination.
  func fuzzOne(_ data: [UInt8]) {
    var input = Input(bytes: data)
    let config = input.byte() ?? 0
    try? FileManager.default.removeItem(at: scratch)
    try? FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
    // A symbolic link inside DEST pointing out of it: placing through it must fail.
    try? FileManager.default.createSymbolicLink(
      atPath: destination.appendingPathComponent("link").path, withDestinationPath: scratch.path)

    var limits = SessionLimits()
    limits.maximumIncomingStreams = 3
    limits.maximumIncomingOffers = 2
    limits.maximumFilesInFlight = 8
    limits.maximumUnreadBytes = 1 << 20
    limits.maximumQueuedReplies = 8
    let session = try! Session(
      identity: identity, displayName: "fuzz", timeouts: .init(), limits: limits,
      accepting: config & 8 == 0 ? .all : [], makeOfferExecutor: { InlineExecutor.shared })
    let asking = config & 1 == 1
    let options = ReceiveOptions(
      destination: destination,
      conflictPolicy: ConflictPolicy.allCases[Int(config >> 4) % ConflictPolicy.allCases.count],
      relocate: config & 4 == 0)
    session.receiveResources(options)

    let budget = LinkBudget(maximumQueuedReplies: limits.maximumQueuedReplies)
    let handler = ConnectionHandler(
      role: .advertiser, localName: "fuzz", localFingerprint: identity.fingerprint,
      timeouts: .init(), budget: budget)
    let channel = EmbeddedChannel()
    let multiplexer = LinkMultiplexer(isInviter: false, budget: budget)
    // The newest version: digest choices, HOLEs and folders reach the offer code.
    multiplexer.protocolVersion = WireProtocol.supportedVersions[0]
    multiplexer.onViolation = { [weak handler] reason in handler?.closeForViolation(reason) }
    try! channel.pipeline.syncOperations.addHandlers([
      ByteToMessageHandler(FrameDecoderHandler(budget: budget)), FrameEncoderHandler(), handler,
      multiplexer,
    ])
    let link = ConnectionLink(channel: channel, handler: handler, multiplexer: multiplexer)
    let questions = Questions()
    handler.onInvite = { invite in
      guard session.adopt(invite.peer, link: link, handler: handler, invitedHere: false) == .adopted
      else { return }
      _ = handler.accept()
      if asking {
        // Offers are asked about; the input decides them.
        let open = OpenQuestions(limit: limits.maximumIncomingOffers)
        multiplexer.onOffer = { id, files, digest throws(LinkLimitExceeded) in
          guard let question = open.open() else {
            throw LinkLimitExceeded("offers waiting for a decision")
          }
          return FerryOfferEndpoint.start(
            channel: id, peer: invite.peer, link: link, files: files,
            checksum: ChecksumAlgorithm(digest),
            reception: .asking(question) { questions.append($0) }, holdsFiles: true,
            events: questions.events, executor: InlineExecutor.shared,
            stall: ConnectionTimeouts().transferStall)
        }
      }
    }
    channel.pipeline.fireChannelActive()
    handler.assumeTLSCompleted(peer: remote.fingerprint)
    var feed: [UInt8] = []
    if config & 2 == 0 {
      // Straight to connected: HELLO and INVITE as a proper inviter sends them (its nonce needs
      // no COMMIT read first: the advertiser committed on HELLO).
      let hello = ControlMessage.hello(
        versions: WireProtocol.supportedVersions, displayName: "fuzzer")
      let invite = ControlMessage.invite(
        timeoutMilliseconds: 30_000, nonce: Array(repeating: 7, count: 32), context: [])
      feed += hello.frame.encoded + invite.frame.encoded
    }
    var digests: [UInt64: SHA256] = [:]
    var streamChannel: UInt32 = 0

    func pump() {
      if !feed.isEmpty {
        _ = try? channel.writeInbound(ByteBuffer(bytes: feed))
        feed = []
      }
      channel.embeddedEventLoop.run()
      while (try? channel.readOutbound(as: ByteBuffer.self)) != nil {}
      _ = try? channel.throwIfErrorCaught()
    }

    pump()
    var steps = 0
    while let operation = input.byte(), steps < 400 {
      steps += 1
      let id = 1 + 2 * UInt32((input.byte() ?? 0) % 6)
      switch operation % 20 {
      case 0:  // any frame, raw
        let type = [
          0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x10, 0x11, 0x12,
          0x13, 0x14, 0x15, 0x20, 0x21, 0x22, 0x23, 0x24, 0x99,
        ][Int(input.byte() ?? 0) % 23]
        feed += frame(UInt8(type), UInt32(input.byte() ?? 0) % 8, input.take(input.number(1100)))
      case 1, 2:  // an OFFER of a few files
        let count = Int(input.byte() ?? 0) % 4 + 1
        var payload: [UInt8] = []
        payload.appendBigEndian(UInt32(count))
        for _ in 0..<count {
          let choice = Int(input.byte() ?? 0)
          let path = choice < 200 ? pathDictionary[choice % pathDictionary.count] : input.take(6)
          payload.appendBigEndian(UInt16(path.count))
          payload += path
          payload.appendBigEndian(UInt64(input.number(600_000)))
          payload.appendBigEndian(UInt64(bitPattern: Int64(input.number(4)) - 1))
          payload.appendBigEndian(UInt32(0))
          payload.appendBigEndian(UInt32(input.number(0o10000)))
        }
        feed += frame(0x20, id, payload)
      case 3, 4, 5:  // a CHUNK of file 0..3
        let file = UInt32((input.byte() ?? 0) % 4)
        let bytes = [UInt8](repeating: input.byte() ?? 0, count: input.number(300_000))
        digests[UInt64(id) << 32 | UInt64(file), default: SHA256()].update(data: bytes)
        var payload: [UInt8] = []
        payload.appendBigEndian(file)
        feed += frame(0x22, id, payload + bytes)
      case 6, 7:  // FILE_END, with the right digest or not
        let file = UInt32((input.byte() ?? 0) % 4)
        let key = UInt64(id) << 32 | UInt64(file)
        let digest =
          (input.byte() ?? 0) < 200
          ? Array(digests[key, default: SHA256()].finalize()) : input.take(32)
        var payload: [UInt8] = []
        payload.appendBigEndian(file)
        feed += frame(0x23, id, payload + digest)
      case 8:  // CREDIT on any channel
        var payload: [UInt8] = []
        payload.appendBigEndian(UInt32(input.number(65536)) << 16 | 1)
        feed += frame(0x15, [0, id, id + 1][Int(input.byte() ?? 0) % 3], payload)
      case 9:  // a stream opened, fed, ended
        streamChannel = max(streamChannel + 2, id)
        if streamChannel % 2 == 0 { streamChannel += 1 }
        feed += frame(0x11, streamChannel, [0, 1, 0x73])
        feed += frame(0x12, streamChannel, [UInt8](repeating: 1, count: input.number(300_000)))
        if (input.byte() ?? 0) & 1 == 0 { feed += frame(0x13, streamChannel, []) }
      case 10:  // RESET of a channel
        feed += frame(0x14, id, [input.byte() ?? 0 % 3, 0, 1, 0x1B])
      case 11:  // a data message
        feed += frame(0x10, 0, [UInt8](repeating: 2, count: input.number(1 << 20)))
      case 12:  // PING (answered), PONG, GOODBYE, or another control frame
        let control = [0x06, 0x07, 0x08, 0x01, 0x02, 0x05, 0x09, 0x0A][
          Int(input.byte() ?? 0) % 8]
        feed += frame(UInt8(control), 0, input.take(Int(input.byte() ?? 0) % 16))
      case 13:  // the application answers the offers it was asked about
        let accept = (input.byte() ?? 0) & 1 == 0
        for question in questions.take() {
          if accept { question.accept(options) } else { question.decline(reason: "no\u{1B}") }
        }
      case 14:  // this side sends
        switch (input.byte() ?? 0) % 4 {
        case 0: _ = multiplexer.sendMessage([1, 2, 3], reliable: (input.byte() ?? 0) & 1 == 0)
        case 1: _ = multiplexer.openStream(named: "out")
        case 2:
          _ = multiplexer.sendStreamData(ByteBuffer(bytes: input.take(100)), channel: id + 1)
        default:
          let file = OfferedFile(
            path: "out", size: 10, modificationSeconds: 0, modificationNanoseconds: 0, mode: 0o644)
          _ = multiplexer.openOffer([file]) { _ in }
        }
      case 15:  // the peer stops reading, or reads again
        channel.isWritable.toggle()
        channel.pipeline.fireChannelWritabilityChanged()
      case 16:  // time passes: deadlines, expiry, heartbeat
        channel.embeddedEventLoop.advanceTime(by: .seconds(Int64(input.byte() ?? 0) % 10))
      case 17:  // delayed offer work (acknowledgements, decision timeouts)
        InlineExecutor.shared.runLater()
      case 18:  // the application consumed some of what arrived
        multiplexer.consumed(
          input.number(1 << 20), channel: [0, id + 1][Int(input.byte() ?? 0) % 2])
      default:  // raw bytes straight into the decoder
        feed += input.take(input.number(64))
      }
      pump()
    }
    _ = try? channel.close().wait()
    pump()
    InlineExecutor.shared.runLater()
    InlineExecutor.shared.discard()
    _ = try? channel.finish()
    session.close()
    // Whatever happened, nothing was written beside the destination.
    let beside = (try? FileManager.default.contentsOfDirectory(atPath: scratch.path)) ?? []
    precondition(beside == ["dest"], "written outside the destination: \(beside)")
  }

  /// Offers asked about, kept for the input to decide; and their (ignored) events.
  final class Questions: @unchecked Sendable {
    private var pending: [ResourceOffer] = []
    let events: AsyncStream<ResourceEvent>.Continuation = {
      AsyncStream<ResourceEvent>.makeStream(bufferingPolicy: .bufferingNewest(1)).continuation
    }()

    func append(_ offer: ResourceOffer) { pending.append(offer) }

    func take() -> [ResourceOffer] {
      defer { pending = [] }
      return pending
    }
  }

  #if FERRY_LIBFUZZER
    @_silgen_name("LLVMFuzzerRunDriver")
    func runDriver(
      _ argc: UnsafeMutablePointer<Int32>,
      _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
      _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
    ) -> Int32

    var argc = CommandLine.argc
    var argv = CommandLine.unsafeArgv
    exit(
      runDriver(&argc, &argv) { data, size in
        fuzzOne(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
        return 0
      })
  #else
    // The random driver: inputs from a seeded generator for SECONDS (default 10).
    let seconds = CommandLine.arguments.count > 1 ? Double(CommandLine.arguments[1]) ?? 10 : 10
    var state =
      CommandLine.arguments.count > 2
      ? UInt64(CommandLine.arguments[2]) ?? 1 : UInt64.random(in: 0...UInt64.max)
    print("ferry-state-fuzz: random driver, seed \(state), \(seconds) s")
    let end = Date().addingTimeInterval(seconds)
    var runs = 0
    while Date() < end {
      var bytes: [UInt8] = []
      for _ in 0..<(200 + Int(state % 800)) {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        bytes.append(UInt8(truncatingIfNeeded: z ^ (z >> 31)))
      }
      fuzzOne(bytes)
      runs += 1
    }
    print("ferry-state-fuzz: \(runs) inputs, no trap")
  #endif
#else
  import Foundation

  FileHandle.standardError.write(
    Data(
      ("ferry-state-fuzz drives Ferry's internals and needs a debug build: "
        + "`swift build --product ferry-state-fuzz`, or scripts/fuzz\n").utf8))
  exit(2)
#endif
