import Ferry
import FerryAPI
import Foundation
import OpenAPIRuntime

/// The control API's operations (the `APIProtocol` generated from docs/api/openapi.yaml),
/// answered from the daemon's parts. Errors are `Error` JSON with a stable code. Any thread;
/// each request on a task of its own.
package struct APIHandler: APIProtocol {
  /// What the operations read and change.
  package struct Parts: Sendable {
    /// This machine as the daemon runs it.
    package let status: @Sendable () -> Components.Schemas.Status
    /// Who is around, and who is known.
    package let peers: @Sendable () -> Components.Schemas.Peers
    /// Queues a send (``DaemonSends``).
    package let sends: DaemonSends
    /// The questions waiting for a person.
    package let offers: OpenOffers
    /// What was received and sent.
    package let history: History
    /// The events.
    package let events: EventLog
    /// A one-time link to the web page, nil when there is none.
    package let uiLogin: @Sendable () -> (url: String, expires: Date)?
    /// What this machine knows of keys (trusted, renamed, forgotten through the API); nil:
    /// those operations answer 503.
    package let knownPeers: KnownPeers?
    /// The receiver's policy, switched through the API; nil: that operation answers 503.
    package let accept: AcceptSwitch?
    /// The folder the daemon receives into (nil: that operation answers 503).
    package let receiveFolder: String?
    /// The transfers coming in (nil: listed as none, and none cancelled).
    package let transfers: ArrivingTransfers?
    /// A browser's files sent as they are uploaded (nil: those operations answer 503).
    package let uploads: BrowserUploads?

    /// The parts.
    package init(
      status: @escaping @Sendable () -> Components.Schemas.Status,
      peers: @escaping @Sendable () -> Components.Schemas.Peers, sends: DaemonSends,
      offers: OpenOffers, history: History, events: EventLog,
      uiLogin: @escaping @Sendable () -> (url: String, expires: Date)? = { nil },
      knownPeers: KnownPeers? = nil, accept: AcceptSwitch? = nil, receiveFolder: String? = nil,
      transfers: ArrivingTransfers? = nil, uploads: BrowserUploads? = nil
    ) {
      (self.status, self.peers, self.sends, self.offers, self.history, self.events) = (
        status, peers, sends, offers, history, events
      )
      self.uiLogin = uiLogin
      self.knownPeers = knownPeers
      self.accept = accept
      self.receiveFolder = receiveFolder
      self.transfers = transfers
      self.uploads = uploads
    }
  }

  let parts: Parts

  /// Operations on `parts`.
  package init(parts: Parts) { self.parts = parts }

  package func getStatus(_ input: Operations.getStatus.Input) async throws
    -> Operations.getStatus.Output
  {
    .ok(.init(body: .json(parts.status())))
  }

  package func listPeers(_ input: Operations.listPeers.Input) async throws
    -> Operations.listPeers.Output
  {
    .ok(.init(body: .json(parts.peers())))
  }

  package func streamEvents(_ input: Operations.streamEvents.Input) async throws
    -> Operations.streamEvents.Output
  {
    let since = input.query.since
    if let since, since < 0 { throw APIProblem.badRequest("since is a record id, 0 or more") }
    guard input.query.follow ?? true else {
      // A replay: everything kept when no cursor is given.
      let lines = parts.events.records(after: since ?? 0).map(\.line)
      return .ok(.init(body: .application_x_hyphen_ndjson(HTTPBody(Array(lines.joined().utf8)))))
    }
    guard let reader = parts.events.follow(since: since) else {
      throw APIProblem(503, "unavailable", "too many clients follow the events; try again later")
    }
    let chunks = reader.chunks { ArraySlice($0.line.utf8) }
    return .ok(.init(body: .application_x_hyphen_ndjson(HTTPBody(chunks, length: .unknown))))
  }

  package func createUILogin(_ input: Operations.createUILogin.Input) async throws
    -> Operations.createUILogin.Output
  {
    guard let login = parts.uiLogin() else {
      throw APIProblem(
        409, "no-ui",
        "the daemon runs without its page (--ui-port off, or ui = false in its config)")
    }
    return .created(.init(body: .json(.init(url: login.url, expires: login.expires))))
  }

  package func listSends(_ input: Operations.listSends.Input) async throws
    -> Operations.listSends.Output
  {
    .ok(.init(body: .json(.init(sends: parts.sends.list().map { $0.api(withFiles: false) }))))
  }

  package func createSend(_ input: Operations.createSend.Input) async throws
    -> Operations.createSend.Output
  {
    guard case .json(let request) = input.body else {
      throw APIProblem.badRequest("the body is a JSON SendRequest")
    }
    let entry = try await parts.sends.queue(request)
    return .created(.init(body: .json(entry.api(withFiles: true))))
  }

  package func getSend(_ input: Operations.getSend.Input) async throws
    -> Operations.getSend.Output
  {
    guard let entry = parts.sends.entry(input.path.id) else {
      throw APIProblem.notFound("no send \(input.path.id)")
    }
    return .ok(.init(body: .json(entry.api(withFiles: true))))
  }

  package func cancelSend(_ input: Operations.cancelSend.Input) async throws
    -> Operations.cancelSend.Output
  {
    guard let entry = await parts.sends.cancel(input.path.id) else {
      throw APIProblem.notFound("no send \(input.path.id)")
    }
    return .ok(.init(body: .json(entry.api(withFiles: false))))
  }

  package func listOffers(_ input: Operations.listOffers.Input) async throws
    -> Operations.listOffers.Output
  {
    .ok(.init(body: .json(.init(offers: parts.offers.open.map(\.offer)))))
  }

  package func acceptOffer(_ input: Operations.acceptOffer.Input) async throws
    -> Operations.acceptOffer.Output
  {
    try answer(input.path.id, accept: true)
    return .ok(.init(body: .json(.init(id: input.path.id, answer: .accepted))))
  }

  package func declineOffer(_ input: Operations.declineOffer.Input) async throws
    -> Operations.declineOffer.Output
  {
    try answer(input.path.id, accept: false)
    return .ok(.init(body: .json(.init(id: input.path.id, answer: .declined))))
  }

  private func answer(_ id: String, accept: Bool) throws(APIProblem) {
    guard parts.offers.answer(id, accept: accept) == .answered else {
      throw APIProblem(
        404, "not-pending",
        "no question \(id) is waiting (answered, withdrawn or out of time: GET /v1/offers)")
    }
  }

  package func getHistory(_ input: Operations.getHistory.Input) async throws
    -> Operations.getHistory.Output
  {
    let limit = input.query.limit ?? 500
    guard (1...500).contains(limit) else { throw APIProblem.badRequest("limit is 1 to 500") }
    let entries = parts.history.newest(limit).map { entry in
      Components.Schemas.HistoryEntry(
        id: entry.id, direction: entry.direction == .received ? .received : .sent,
        peer: entry.peer, fingerprint: entry.fingerprint,
        _protocol: .init(rawValue: entry.protocol) ?? .ferry, files: entry.files,
        bytes: Int(clamping: entry.bytes),
        outcome: .init(rawValue: entry.outcome.rawValue) ?? .failed,
        at: entry.at)
    }
    return .ok(.init(body: .json(.init(entries: entries))))
  }

  package func getDocument(_ input: Operations.getDocument.Input) async throws
    -> Operations.getDocument.Output
  {
    .ok(.init(body: .yaml(HTTPBody(APIDocument.yaml))))
  }
}
