/// The NDJSON events `--json` writes: their names, declared once here, and the fields each may
/// carry, read from the records that write them (``EventRecord``; docs/CLI.md lists exactly
/// these, `EventCatalogTests` checks it).
enum Event: String, CaseIterable, Sendable {
  case peerFound = "peer-found"
  case peerUpdated = "peer-updated"
  case peerLost = "peer-lost"
  case peerRemembered = "peer-remembered"
  case advertising
  case webLink = "web-link"
  case webDownload = "web-download"
  case discoveryUnavailable = "discovery-unavailable"
  case renamed
  case discoveryInterrupted = "discovery-interrupted"
  case discoveryFailed = "discovery-failed"
  case invited
  case invitation
  case keyChanged = "key-changed"
  case accepted
  case declined
  case refused
  case senderRefused = "sender-refused"
  case withdrawn
  case text
  case check
  case offer
  case progress
  case fileDone = "file-done"
  case leftOut = "left-out"
  case done
  case retrying
  case resumed
  case stagingCleaned = "staging-cleaned"
  case error
  case identity
  case peer
  case namedAddress = "named-address"
  case queued
  case delivering
  case sendEnded = "send-ended"
  case outboxProblem = "outbox-problem"
  case asking
  case around

  /// Every event record, by the events it is: what each event's fields are read from.
  static let records: [any EventRecord.Type] = [
    PeerSeen.self, PeerLost.self, PeerRemembered.self, Advertising.self, WebLink.self,
    WebDownload.self,
    DiscoveryOutage.self,
    DiscoveryFailed.self,
    Renamed.self, Invited.self, InvitationAsked.self, KeyChanged.self, SendAccepted.self,
    LocalSendAsked.self, LocalSendFound.self, ReceiveAccepted.self, Declined.self,
    OfferDeclined.self, SenderRefused.self, Withdrawn.self, TextReceived.self,
    OfferStarted.self, OfferRefused.self, TransferProgressed.self, FileDone.self, LeftOut.self,
    SendDone.self, ReceiveDone.self, Retrying.self, Resumed.self, StagingCleaned.self,
    Failure.self, Check.self, IdentityShown.self, KnownPeer.self, NamedPeer.self, SendQueued.self,
    SendDelivering.self, SendEnded.self, OutboxProblem.self, QuestionAsked.self,
    AroundChanged.self,
  ]

  /// The fields of each element of a discovered peer's `addresses`.
  static var addressFields: [String] { EventFieldNames.of(PeerSeen.Address.self) }

  /// Every field the event may carry besides `event` and `timestamp` (some only from one
  /// command, or only in some cases: docs/CLI.md says which), read from its records.
  var fields: [String] {
    var names: [String] = []
    for record in Self.records where record.events.contains(self) {
      for name in record.fieldNames where !names.contains(name) { names.append(name) }
    }
    return names
  }
}
