import Ferry
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A LocalSend device seen on the network.
public struct LocalSendSighting: Sendable {
  /// What it says about itself (checked field by field; its fingerprint is a claim until a
  /// connection to it proves it).
  public let device: LocalSendDevice
  /// The address it was seen from.
  public let address: String
  /// How: its announcement, its answer to ours (our `register` to it, or an older app's
  /// multicast answer), or its `register` to this side's server.
  public let via: Via
  /// Whether a TLS handshake at this address proved the key it claims: our `register` to it
  /// (its certificate pinned to the fingerprint announced), or its `register` to us with a
  /// client certificate. An announcement proves nothing (anyone can send one, from any
  /// address); nor does a `register` without a certificate (third-party apps send those).
  public let proven: Bool

  /// How a device was heard: its multicast announcement, its register answer, its register
  /// to this side, or its answer to a scan of addresses the user gave.
  public enum Via: String, Sendable {
    case announcement, answer, register, scan
  }

  /// Makes one from its fields.
  public init(device: LocalSendDevice, address: String, via: Via, proven: Bool = false) {
    self.device = device
    self.address = address
    self.via = via
    self.proven = proven
  }
}

/// LocalSend's discovery: announcements multicast to 224.0.0.167:53317 (and ff12::fd3a:e420)
/// on each interface that has multicast — three times at start, and on ``announce()`` — and,
/// for each announcement heard, an answer by `POST /register` to its sender, over HTTPS with
/// its certificate pinned to the fingerprint it announced, as LocalSend 1.18 answers (plain
/// HTTP only for a receiver that serves it). What it hears comes out of ``sightings``. Needs no
/// avahi-daemon. Thread-safe.
///
/// Each announcement answered is also answered by multicast (`announce: false`), whatever
/// comes of the register, as apps of 1.17 and older answer when they cannot reach the
/// announcer: a device whose firewall refuses connections still sees this one.
///
/// An announcement is a datagram anyone can forge, source address included, so answering one
/// is paced: each address at most once per ``answerInterval`` whatever key or port it claims,
/// a few at a time, only neighbours, at most one multicast answer a second; and no answer ever
/// depends on how a connection went (older apps multicast only when the register failed,
/// which told a forger whether the port it named was open).
public final class LocalSendDiscovery: Sendable {
  /// The interfaces to use: all that are up, have multicast and are not loopback, or these
  /// (by name).
  public let interfaceNames: [String]?
  /// Everything heard (this device's own announcements left out).
  public let sightings: AsyncStream<LocalSendSighting>
  let continuation: AsyncStream<LocalSendSighting>.Continuation
  let me: @Sendable () -> LocalSendDevice
  let client: LocalSendClient
  /// When each address was last asked by a scan (``scan(_:)``).
  let scanned = Mutex<[String: ContinuousClock.Instant]>([:])
  /// Whether announcements of plain-HTTP devices are answered (a receiver that serves plain
  /// HTTP itself, `--localsend-http`).
  private let answersPlainHTTP: Bool
  private let channels = Mutex<[any Channel]>([])
  /// When each address was last answered, and how many answers are under way.
  private let answers = Mutex<(last: [String: ContinuousClock.Instant], running: Int)>(([:], 0))
  /// When the last multicast answer went.
  private let lastMulticastAnswer = Mutex<ContinuousClock.Instant?>(nil)
  /// The least time between two multicast answers, whoever they answer.
  static let multicastAnswerInterval: Duration = .seconds(1)

  /// How often one address is answered, whatever device it claims to be.
  static let answerInterval: Duration = .seconds(30)
  /// Answers under way at once.
  static let concurrentAnswers = 4
  /// Addresses whose last answer is remembered (beyond them, nothing is answered until the
  /// oldest are ``answerInterval`` old).
  static let rememberedAnswers = 256
  private let devices = Mutex<[NIONetworkDevice]>([])

  /// The most bytes of one datagram taken (an announcement is a few hundred).
  static let maximumDatagram = 16 << 10

  /// - Parameters:
  ///   - me: This device as announced (read at each announcement: its port may be known only
  ///     once its server listens).
  ///   - identity: The certificate presented when answering by `register`.
  ///   - answersPlainHTTP: Whether devices announcing plain HTTP are answered (over plain
  ///     HTTP); by default only HTTPS devices are.
  /// - Throws: NIOSSL's error when the identity cannot make a TLS context.
  public init(
    me: @escaping @Sendable () -> LocalSendDevice, identity: Identity,
    interfaces: [String]? = nil, answersPlainHTTP: Bool = false
  ) throws {
    self.me = me
    self.answersPlainHTTP = answersPlainHTTP
    interfaceNames = interfaces
    client = LocalSendClient(
      tls: try LocalSendTLS(identity: identity, senderCheck: .certificate),
      answerTimeout: .seconds(5))
    (sightings, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(256))
  }

  /// Listens on UDP 53317 and joins the groups on each interface, then announces (at once,
  /// 500 ms and 2 s later).
  ///
  /// - Returns: The interfaces used (their names).
  /// - Throws: when no interface could join the IPv4 group (the port taken without
  ///   SO_REUSEPORT, no multicast interface).
  @discardableResult
  public func start() async throws -> [String] {
    let all = try System.enumerateDevices().filter { device in
      guard device.multicastSupported, let address = device.address else { return false }
      if let names = interfaceNames { return names.contains(device.name) }
      return !(address.ipAddress?.hasPrefix("127.") ?? true) && address.ipAddress != "::1"
    }
    devices.withLock { $0 = all }
    var joined: [String] = []
    let v4 = try await bind(host: "0.0.0.0")
    for device in all where device.address?.protocol == .inet {
      do {
        try await (v4 as! any MulticastChannel).joinGroup(
          try SocketAddress(ipAddress: LocalSendProtocol.multicastGroupV4, port: 53317),
          device: device
        ).get()
        joined.append(device.name)
      } catch {
        FerryLogging.logger.notice("LocalSend: \(device.name) did not join the group: \(error)")
      }
    }
    if let v6 = try? await bind(host: "::") {
      for device in all where device.address?.protocol == .inet6 {
        _ = try? await (v6 as! any MulticastChannel).joinGroup(
          try SocketAddress(ipAddress: LocalSendProtocol.multicastGroupV6, port: 53317),
          device: device
        ).get()
      }
    }
    guard !joined.isEmpty else {
      stop()
      throw LocalSendRequestError.unreachable("no network interface with multicast")
    }
    Task {
      for delay in [0, 500, 1500] {
        try? await Task.sleep(for: .milliseconds(delay))
        self.announce()
      }
    }
    return joined
  }

  /// A device that registered with this side's server (its answer to an announcement, by
  /// `POST /register`), from `address`: a sighting (`via` ``LocalSendSighting/Via/register``),
  /// `proven` when its client certificate proved its key. This device's own fingerprint is
  /// left out. Thread-safe.
  public func heard(registration device: LocalSendDevice, from address: String, proven: Bool) {
    guard device.fingerprint.uppercased() != me().fingerprint.uppercased() else { return }
    continuation.yield(
      LocalSendSighting(device: device, address: address, via: .register, proven: proven))
  }

  /// Announces this device on every interface (`announce: true`: whoever hears answers).
  public func announce() {
    send(me().with(announce: true))
  }

  /// Stops listening.
  public func stop() {
    for channel in channels.withLock({ $0 }) { channel.close(promise: nil) }
    channels.withLock { $0 = [] }
    continuation.finish()
  }

  // MARK: Private

  private func bind(host: String) async throws -> any Channel {
    let channel = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .channelOption(.socketOption(.so_reuseaddr), value: 1)
      .channelOption(ChannelOptions.socket(SocketOptionLevel(SOL_SOCKET), SO_REUSEPORT), value: 1)
      .channelOption(
        .recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: Self.maximumDatagram)
      )
      .channelInitializer { [weak self] channel in
        guard let self else { return channel.eventLoop.makeSucceededVoidFuture() }
        return channel.pipeline.addHandler(DatagramReader { self.heard($0, from: $1) })
      }
      .bind(host: host, port: Int(LocalSendProtocol.defaultPort)).get()
    channels.withLock { $0.append(channel) }
    return channel
  }

  /// Sends `device` to the groups on every interface.
  private func send(_ device: LocalSendDevice) {
    let bytes = LocalSendJSON.encode(device)
    let (channels, devices) = (self.channels.withLock { $0 }, self.devices.withLock { $0 })
    for channel in channels {
      let isV6 = channel.localAddress?.protocol == .inet6
      guard let provider = channel as? any SocketOptionProvider,
        let group = try? SocketAddress(
          ipAddress: isV6 ? LocalSendProtocol.multicastGroupV6 : LocalSendProtocol.multicastGroupV4,
          port: 53317)
      else { continue }
      for device in devices where (device.address?.protocol == .inet6) == isV6 {
        let chosen: EventLoopFuture<Void>
        if isV6 {
          chosen = provider.setIPv6MulticastIF(CUnsignedInt(device.interfaceIndex))
        } else if case .v4(let address) = device.address {
          chosen = provider.setIPMulticastIF(address.address.sin_addr)
        } else {
          continue
        }
        chosen.whenSuccess {
          let envelope = AddressedEnvelope(
            remoteAddress: group, data: channel.allocator.buffer(bytes: bytes))
          channel.writeAndFlush(envelope, promise: nil)
        }
      }
    }
  }

  /// A datagram from `sender`: an announcement is answered; anything valid is a sighting.
  private func heard(_ bytes: [UInt8], from sender: SocketAddress) {
    guard let device = try? LocalSendJSON.decode(LocalSendDevice.self, from: bytes).validated()
    else { return }
    let own = me()
    guard device.fingerprint.uppercased() != own.fingerprint.uppercased() else { return }
    let address = PeerAddress.of(sender)
    continuation.yield(
      LocalSendSighting(
        device: device, address: address, via: device.asksForAnswer ? .announcement : .answer))
    guard device.asksForAnswer, device.usesTLS || answersPlainHTTP, isOnLink(sender),
      claimAnswer(at: address)
    else { return }
    // Before the register, whatever comes of it: the multicast tells nothing of a connection.
    let now = ContinuousClock.now
    let mayMulticast = lastMulticastAnswer.withLock { last in
      if let last, now - last < Self.multicastAnswerInterval { return false }
      last = now
      return true
    }
    if mayMulticast { send(own.answer) }
    Task {
      await answer(device, at: address)
      answers.withLock { $0.running -= 1 }
    }
  }

  /// Whether an answer to `address` may go now: once per ``answerInterval`` whatever key or
  /// port the announcement claims, a few at a time — an announcement (spoofed or not) never
  /// makes this machine connect to whatever it names, as often as it is heard.
  private func claimAnswer(at address: String) -> Bool {
    let key = address
    let now = ContinuousClock.now
    return answers.withLock { answers in
      if let last = answers.last[key], now - last < Self.answerInterval { return false }
      guard answers.running < Self.concurrentAnswers else { return false }
      if answers.last.count >= Self.rememberedAnswers {
        answers.last = answers.last.filter { now - $0.value < Self.answerInterval }
        if answers.last.count >= Self.rememberedAnswers { return false }
      }
      answers.last[key] = now
      answers.running += 1
      return true
    }
  }

  /// Whether `sender` is on the network of one of the interfaces listened on (announcements
  /// come from neighbours; anything else is not answered).
  private func isOnLink(_ sender: SocketAddress) -> Bool {
    guard let senderBytes = Self.bytes(of: sender) else { return false }
    for device in devices.withLock({ $0 }) {
      guard let address = device.address.flatMap(Self.bytes(of:)),
        let mask = device.netmask.flatMap(Self.bytes(of:)),
        address.count == senderBytes.count, mask.count == senderBytes.count
      else { continue }
      if zip(zip(address, mask), senderBytes).allSatisfy({ ($0.0 & $0.1) == ($1 & $0.1) }) {
        return true
      }
    }
    // IPv6 link-local (fe80::/10) is on the link it came in on.
    return senderBytes.count == 16 && senderBytes[0] == 0xFE && senderBytes[1] & 0xC0 == 0x80
  }

  /// An address's bytes (4 or 16); an IPv4-mapped IPv6 address as its 4.
  private static func bytes(of address: SocketAddress) -> [UInt8]? {
    switch address {
    case .v4(let v4):
      return withUnsafeBytes(of: v4.address.sin_addr.s_addr) { Array($0) }
    case .v6(let v6):
      let all = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
      if all[0..<10].allSatisfy({ $0 == 0 }), all[10] == 0xFF, all[11] == 0xFF {
        return Array(all[12..<16])
      }
      return all
    default:
      return nil
    }
  }

  /// Answers an announcement: `POST /register` to its sender, at the port it announced, its
  /// certificate pinned to the fingerprint it announced. Nothing else, whatever comes of it.
  private func answer(_ device: LocalSendDevice, at address: String) async {
    let port = device.port ?? Int(LocalSendProtocol.defaultPort)
    let expected = device.usesTLS ? try? Fingerprint(parsing: device.fingerprint) : nil
    // An HTTPS device whose fingerprint is not one: nothing could be pinned, nothing asked.
    if device.usesTLS && expected == nil { return }
    guard
      let answer = try? await client.request(
        .POST, host: address, port: port, path: LocalSendProtocol.Path.register,
        body: .json(LocalSendJSON.encode(me().answer)), expecting: expected,
        plainHTTP: !device.usesTLS),
      answer.status.code == 200,
      let registered = try? LocalSendJSON.decode(LocalSendDevice.self, from: answer.body)
        .validated(),
      // The key pinned in the handshake is the one it answers with.
      !device.usesTLS || registered.fingerprint.uppercased() == device.fingerprint.uppercased()
    else { return }
    continuation.yield(
      LocalSendSighting(
        device: registered, address: address, via: .answer, proven: device.usesTLS))
  }
}

extension LocalSendDevice {
  /// The device with `announce` set.
  func with(announce: Bool) -> LocalSendDevice {
    var copy = self
    copy.announce = announce
    copy.announcement = announce
    return copy
  }
}

/// Hands each datagram's bytes and sender on. On the channel's event loop.
private final class DatagramReader: ChannelInboundHandler, @unchecked Sendable {
  typealias InboundIn = AddressedEnvelope<ByteBuffer>
  private let onDatagram: @Sendable ([UInt8], SocketAddress) -> Void

  init(_ onDatagram: @escaping @Sendable ([UInt8], SocketAddress) -> Void) {
    self.onDatagram = onDatagram
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    let envelope = unwrapInboundIn(data)
    onDatagram(Array(envelope.data.readableBytesView), envelope.remoteAddress)
  }
}
