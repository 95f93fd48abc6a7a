import ArgumentParser
import Ferry
import FerryAPI
import FerryAgent
import Foundation

/// `ferry offers`: the questions the daemon holds for a person.
struct OffersCommand: LoggingCommand, AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "offers",
    abstract: "List what senders ask the daemon that waits for a person.",
    discussion: """
      Each with its id (answer it with 'ferry accept ID' or 'ferry decline ID'), who asks \
      (known, new, trusted, KEY CHANGED, LOOK-ALIKE NAME), what, how much, the verification \
      code, and the time left before it is declined unanswered.

      Examples:
        ferry offers
        ferry offers --json | jq -r .id
      """)

  @OptionGroup var logging: LogOptions
  @OptionGroup var daemon: DaemonSocketOption

  @Flag(name: [.short, .long], help: "Print each question as one JSON object (the API's Offer).")
  var json = false

  func run() async throws {
    let client = try daemon.client()
    let offers: [Components.Schemas.Offer]
    do {
      switch try await client.api.listOffers() {
      case .ok(let ok): offers = try ok.body.json.offers
      case .default(let code, let problem):
        throw DaemonClient.failure(try problem.body.json, status: code)
      }
    } catch {
      throw client.failure(error)
    }
    let output = EventWriter(json: false)
    for offer in offers {
      if json {
        StandardStream.output.write(DaemonClient.json(offer) + "\n")
        continue
      }
      output.say(Self.describe(offer))
    }
    if offers.isEmpty && !json { output.note("Nothing waits for an answer.") }
  }

  /// One question in a line and its names.
  static func describe(_ offer: Components.Schemas.Offer) -> String {
    var what: String
    if offer.text {
      what = "a text" + (offer.bytes.map { " (\(Quantity.bytes(UInt64($0))))" } ?? "")
    } else if let files = offer.files {
      what =
        Quantity.count(files, "file")
        + (offer.bytes.map { ", \(Quantity.bytes(UInt64($0)))" } ?? "")
    } else {
      what = "(it did not say what)"
    }
    let key =
      offer.sender.fingerprint.flatMap { try? Fingerprint(parsing: $0) }?.shortDescription
      ?? "no key"
    let left = max(0, Int(offer.expires.timeIntervalSinceNow.rounded()))
    var line =
      "\(offer.id)  \(DisplayText.quoted(offer.sender.name)) [\(key)] \(offer.sender.status.rawValue), \(offer.sender._protocol.rawValue): \(what)"
    if let code = offer.code { line += ", code \(code)" }
    switch offer.reason {
    case .differs?: line += ", not the files it announced"
    case .unannounced?: line += ", it did not say what before"
    case .later?: line += ", more files after the first"
    case nil: break
    }
    if let previous = offer.previousFingerprint.flatMap({ try? Fingerprint(parsing: $0) }) {
      line += "\n    the name is known here with another key: \(previous.shortDescription)"
    }
    line += ", \(left) s left"
    for name in offer.names.prefix(5) { line += "\n    \(printable(name))" }
    return line
  }
}
