import Ferry
import FerryAPI
import FerryAgent
import FerryLocalSend
import Foundation

extension OpenOffers {
  /// How many names a question lists (what the sender sends is in its counts).
  static let shownNames = 20

  /// `question` as the API shows it.
  static func offer(_ question: ConsentQuestion, id: String) -> Components.Schemas.Offer {
    let peer = question.sender.peer
    var kind: Components.Schemas.Offer.kindPayload
    var protocolName: Components.Schemas.Offer.senderPayload._protocolPayload = .ferry
    var address: String?
    var fingerprint: String? = peer.fingerprint.hexString
    var files: Int?
    var folders: Int?
    var bytes: UInt64?
    var names: [String] = []
    var text = false
    var reason: Components.Schemas.Offer.reasonPayload?
    switch question.subject {
    case .invitation(let summary):
      kind = .invitation
      if let summary {
        if summary.text != nil {
          text = true
        } else {
          (files, folders, bytes) = (summary.files, summary.folders ?? 0, summary.bytes)
          names = Array(summary.names.prefix(shownNames))
        }
      }
    case .offer(let facts, let because):
      kind = .offer
      switch because {
      case .differsFrom: reason = .differs
      case .unannounced: reason = .unannounced
      case .later: reason = .later
      }
      (files, folders, bytes) = (facts.files.count, facts.folders.count, facts.totalBytes)
      names = facts.files.prefix(shownNames).map(\.path)
    case .localSendFiles(let facts, let sender):
      kind = .files
      protocolName = sender.isBrowser ? .web : .localsend
      address = sender.address
      if !sender.verified { fingerprint = nil }
      (files, folders, bytes) = (facts.files.count, facts.folders.count, facts.totalBytes)
      names = facts.files.prefix(shownNames).map(\.path)
    case .localSendText(let count, let sender):
      kind = .text
      protocolName = sender.isBrowser ? .web : .localsend
      address = sender.address
      if !sender.verified { fingerprint = nil }
      bytes = UInt64(count)
      text = true
    }
    return Components.Schemas.Offer(
      id: id, kind: kind,
      sender: .init(
        name: peer.displayName, fingerprint: fingerprint, status: status(question.sender.status),
        verified: question.sender.verified, _protocol: protocolName, address: address),
      files: files, folders: folders, bytes: bytes.map { Int(clamping: $0) }, names: names,
      text: text, reason: reason,
      previousFingerprint: previous(question.sender.status)?.hexString,
      code: question.code?.digits,
      expires: Date(timeIntervalSinceNow: seconds(question.deadline - .now)))
  }

  /// The key a changed or look-alike name belongs to here.
  static func previous(_ status: KnownPeers.Status) -> Fingerprint? {
    switch status {
    case .changedKey(let previous), .similarName(_, let previous): previous
    case .new, .known: nil
    }
  }

  /// The words the prompt uses for what this machine knows of a key.
  static func status(_ status: KnownPeers.Status)
    -> Components.Schemas.Offer.senderPayload.statusPayload
  {
    switch status {
    case .new: .new
    case .known(let trusted): trusted ? .trusted : .known
    case .changedKey: .KEY_space_CHANGED
    case .similarName: .LOOK_hyphen_ALIKE_space_NAME
    }
  }
}

/// `duration` in seconds.
func seconds(_ duration: Duration) -> Double {
  let (whole, fraction) = duration.components
  return Double(whole) + Double(fraction) / 1e18
}
