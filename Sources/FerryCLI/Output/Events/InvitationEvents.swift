import Ferry
import Foundation

/// `invited`: `send` asked a receiver, before its answer.
struct Invited: EventRecord {
  static let events: [Event] = [.invited]
  let peer: String
  let code: String
}

/// `invitation`: a sender asks `receive`; what it says it sends (null: nothing plausible).
struct InvitationAsked: EventRecord {
  static let events: [Event] = [.invitation]
  let peer: String
  let fingerprint: String
  let status: String
  let code: String
  let files: Int?
  let folders: Int?
  let text: Bool
  let bytes: Int?
  let streamed: Int?
  let expires: String
}

/// `key-changed`: the name `send` looks for now has another key.
struct KeyChanged: EventRecord {
  static let events: [Event] = [.keyChanged]
  let peer: String
  let fingerprint: String
  let previous: String
}

/// `accepted` on `send`: the receiver said yes (`code`: the connection's verification code).
struct SendAccepted: EventRecord {
  static let events: [Event] = [.accepted]
  let peer: String
  let fingerprint: String
  let code: String?
}

/// `accepted` on `receive`: a sender was let in (`resumed`: taken back without asking).
struct ReceiveAccepted: EventRecord {
  static let events: [Event] = [.accepted]
  let peer: String
  let resumed: Bool
}

/// `declined`: an invitation said no to (or on `send`, by the receiver).
struct Declined: EventRecord {
  static let events: [Event] = [.declined]
  let peer: String
  let reason: String
}

/// `declined` on `receive`, of an offer: its files and bytes too.
struct OfferDeclined: EventRecord {
  static let events: [Event] = [.declined]
  let peer: String
  let reason: String
  let files: Int
  let bytes: Int
}

/// `sender-refused`: a LocalSend sender turned away in the TLS handshake, before it could ask
/// anything (once per address and reason in 10 minutes): its app says only that the
/// connection failed.
struct SenderRefused: EventRecord {
  static let events: [Event] = [.senderRefused]
  let `protocol`: String
  let address: String
  /// Its alias, when it announced one from that address.
  let name: String?
  /// `no-certificate`, `plain-http` or `tls`.
  let code: String
  let message: String
}

/// `withdrawn`: the sender gave up while it was asked about.
struct Withdrawn: EventRecord {
  static let events: [Event] = [.withdrawn]
  let peer: String
}

/// `text`: an accepted sender's text.
struct TextReceived: EventRecord {
  static let events: [Event] = [.text]
  let peer: String
  let text: String
}

/// `invitation` on `receive`, from a LocalSend sender (`protocol` "localsend"): its device,
/// address and whether its certificate proved its key; what it sends (`text`: a message).
struct LocalSendAsked: EventRecord {
  static let events: [Event] = [.invitation]
  let peer: String
  let fingerprint: String
  let status: String
  let `protocol`: String
  let verified: Bool
  let deviceType: String?
  let deviceModel: String?
  let address: String
  let files: Int?
  let folders: Int?
  let text: Bool
  let bytes: Int?
}

/// `peer-found` on `send --localsend`: the LocalSend device the files go to (`fingerprint`:
/// its certificate's; null over plain HTTP).
struct LocalSendFound: EventRecord {
  static let events: [Event] = [.peerFound]
  let peer: String
  let fingerprint: String?
  let `protocol`: String
  let deviceType: String?
  let deviceModel: String?
  let address: String
  /// How browse heard it: "announcement", "answer", "register" or "scan" (null on send).
  var source: String? = nil
}
