import ArgumentParser
import Ferry
import Foundation

/// `ferry receive`: advertises this machine so that senders can find it.
///
/// This version advertises only: the invitation handshake and transfers arrive with the session
/// layer.
struct ReceiveCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "receive",
    abstract: "Advertise this machine to senders on the local network.",
    discussion: """
      Publishes this machine as a Ferry peer through avahi-daemon until Ctrl-C (exit 130). \
      If the name is taken on the network, Avahi's alternative ('NAME #2') is used and printed.
      This build advertises only; accepting transfers comes with the session layer.

      Examples:
        ferry receive
        ferry receive --name "Kitchen laptop" --port 52000
        ferry receive --json
      """)

  @Option(help: "The name senders see (1-63 bytes of UTF-8). Default: this machine's host name.")
  var name: String?

  @Option(
    parsing: .unconditional,
    help: "The DNS-SD service type to publish (RFC 6335 name).")
  var service: String = ServiceType.ferry.name

  @Option(help: "The TCP port to listen on (default: any free port).")
  var port: UInt16 = 0

  @Flag(help: "Write one JSON object per line to stdout (advertising, renamed, ...).")
  var json = false

  func run() async throws {
    let output = EventWriter(json: json)
    let serviceType = try parseServiceType(service)
    let displayName = name ?? ProcessInfo.processInfo.hostName
    let peer: PeerID
    do {
      // Placeholder identity until the Security layer provides the certificate's fingerprint.
      let fingerprint = try Fingerprint(bytes: (0..<32).map { _ in UInt8.random(in: 0...255) })
      peer = try PeerID(displayName: displayName, fingerprint: fingerprint)
    } catch let error as PeerIDError {
      throw CLIFailure(status: .usage, message: error.description, code: "invalid-name")
    }
    let reservation = try PortReservation(port: port)
    let advertiser: Advertiser
    do {
      advertiser = try Advertiser(peer: peer, serviceType: serviceType, port: reservation.port)
    } catch {
      throw cliFailure(error)
    }
    Interrupts.onInterrupt { advertiser.stop() }
    let published: String
    do {
      published = try await advertiser.start()
    } catch {
      throw cliFailure(error)
    }
    if published != displayName {
      output.event("renamed", [("from", .string(displayName)), ("to", .string(published))])
      output.note(
        "The name '\(displayName)' is taken on the network; advertising as '\(published)'.")
    }
    output.event(
      "advertising",
      [
        ("name", .string(published)), ("fingerprint", .string(peer.fingerprint.hexString)),
        ("service", .string(serviceType.dnsSDType)), ("port", .int(Int(reservation.port))),
      ])
    output.say(
      "Advertising as '\(published)' [\(peer.fingerprint.shortDescription)] on "
        + "\(serviceType), port \(reservation.port). Press Ctrl-C to stop.")
    // Renames before the first `.published` are already in `published` and reported above.
    var initialRegistration = true
    for await event in advertiser.events {
      switch event {
      case .published:
        initialRegistration = false
      case .renamed where initialRegistration:
        break
      case .renamed(let from, let to):
        output.event("renamed", [("from", .string(from)), ("to", .string(to))])
        output.note("The name '\(from)' is taken on the network; advertising as '\(to)'.")
      case .daemonDisconnected(let reason):
        output.event("discovery-interrupted", [("reason", .string(reason))])
        output.note("avahi-daemon went away (\(reason)); advertising again when it returns.")
      case .failed(let error):
        throw cliFailure(error)
      }
    }
    withExtendedLifetime(reservation) {}
  }
}
