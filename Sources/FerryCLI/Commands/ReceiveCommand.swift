import ArgumentParser
import Ferry
import Foundation

/// `ferry receive`: advertises this machine and listens for invitations.
///
/// This version shows each invitation (who, fingerprint, known/new/KEY CHANGED, verification
/// code) and declines it: accepting transfers arrives with the transfer layer.
struct ReceiveCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "receive",
    abstract: "Advertise this machine to senders on the local network.",
    discussion: """
      Listens for encrypted connections and publishes this machine as a Ferry peer through \
      avahi-daemon until Ctrl-C (exit 130). If the name is taken on the network, Avahi's \
      alternative ('NAME #2') is used and printed. Each invitation is shown with the sender's \
      name, fingerprint and the verification code; this build declines them, since accepting \
      transfers comes with the transfer layer.

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

  @Flag(help: "Write one JSON object per line to stdout (advertising, invitation, ...).")
  var json = false

  func run() async throws {
    let output = EventWriter(json: json)
    let serviceType = try parseServiceType(service)
    let displayName = name ?? ProcessInfo.processInfo.hostName
    let identity = try loadIdentity()
    let knownPeers = KnownPeers()
    let advertiser: Advertiser
    do {
      advertiser = try Advertiser(
        identity: identity, displayName: displayName, serviceType: serviceType, port: port,
        knownPeers: knownPeers)
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
        ("name", .string(published)), ("fingerprint", .string(identity.fingerprint.hexString)),
        ("service", .string(serviceType.dnsSDType)), ("port", .int(Int(advertiser.port))),
      ])
    output.say(
      "Advertising as '\(published)' [\(identity.fingerprint.shortDescription)] on "
        + "\(serviceType), port \(advertiser.port). Press Ctrl-C to stop.")
    Task {
      for await invitation in advertiser.invitations {
        report(invitation, output: output)
        invitation.decline(reason: "this ferry version cannot receive files yet")
      }
    }
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
  }

  private func report(_ invitation: Invitation, output: EventWriter) {
    let status: String
    switch invitation.status {
    case .known(let trusted): status = trusted ? "trusted" : "known"
    case .new: status = "new"
    case .changedKey: status = "KEY CHANGED"
    }
    output.event(
      "invitation",
      [
        ("peer", .string(invitation.peer.displayName)),
        ("fingerprint", .string(invitation.fingerprint.hexString)),
        ("status", .string(status)), ("code", .string(invitation.verificationCode.digits)),
      ])
    if case .changedKey(let previous) = invitation.status {
      output.note(
        "WARNING: '\(invitation.peer.displayName)' is known with another key "
          + "(\(previous.shortDescription)); this one is \(invitation.fingerprint.shortDescription). "
          + "It may be someone else using that name.")
    }
    output.say(
      "Invitation from '\(invitation.peer.displayName)' [\(invitation.fingerprint.shortDescription)] "
        + "(\(status)), verification code \(invitation.verificationCode): declined, this version "
        + "cannot receive files yet.")
  }
}
