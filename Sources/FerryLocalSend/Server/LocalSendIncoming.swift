import Ferry
import Foundation
import Synchronization

/// Who is sending, as a LocalSend receiver knows it: what the device says about itself, where
/// it connects from, and whether its certificate proved the fingerprint it claims.
public struct LocalSendSender: Sendable, CustomStringConvertible {
  /// The peer as Ferry's consent and known-peers logic see it: the device's alias (made a
  /// valid display name) and, when ``verified``, its certificate's fingerprint — otherwise a
  /// fingerprint derived from what it claimed and its address, which no accept list, trusted
  /// key or known name can hold.
  public let peer: PeerID
  /// What it said about itself.
  public let device: LocalSendDevice
  /// The address it connects from.
  public let address: String
  /// Whether a client certificate proved its fingerprint (LocalSend 2.2); false for an app of
  /// 1.17 or older, which presents none (its fingerprint is only what it claims).
  public let verified: Bool
  /// Whether it is a browser on ``LocalSendWebAccess``'s page (`ferry receive --web`): its
  /// alias is "Browser", its model the User-Agent it sent, and nothing about it is proven.
  public let isBrowser: Bool

  /// "alice [9F2C 41AB …] (LocalSend, Pixel 8, phone)"; "unverified" when it is.
  public var description: String {
    // What the device says of itself, without controls (a newline would forge a line).
    var kind = [isBrowser ? "web page" : "LocalSend"]
    if let model = device.deviceModel, !model.isEmpty { kind.append(Self.displayName(model)) }
    if let type = device.deviceType, !type.isEmpty { kind.append(Self.displayName(type)) }
    if !verified { kind.append("unverified") }
    return "\(peer) (\(kind.joined(separator: ", ")))"
  }

  /// A sender from what it said (`device`), where it is (`address`), and the fingerprint its
  /// certificate proved (nil: none).
  init(device: LocalSendDevice, address: String, proven: Fingerprint?) {
    self.device = device
    self.address = address
    verified = proven != nil
    isBrowser = false
    peer = Self.peer(
      alias: device.alias,
      key: proven
        ?? Fingerprint(
          sha256Of: Array(
            "ferry: unverified LocalSend sender \(device.fingerprint) at \(address)".utf8)))
  }

  /// A browser on a web receiver's page at `address`: "Browser", its User-Agent (cut to 200
  /// bytes on a character boundary) as its model, type "web", and a key derived from its
  /// page's random claim and its address, which nothing can hold.
  init(browserAt address: String, userAgent: String?, claim: String) {
    var model = ""
    for character in userAgent ?? "" {
      guard model.utf8.count + String(character).utf8.count <= 200 else { break }
      model.append(character)
    }
    device = LocalSendDevice(
      alias: "Browser", deviceModel: model.isEmpty ? nil : model, deviceType: "web",
      fingerprint: claim, port: nil, protocol: "http", download: false)
    self.address = address
    verified = false
    isBrowser = true
    peer = Self.peer(
      alias: "Browser",
      key: Fingerprint(sha256Of: Array("ferry: a browser's claim \(claim) at \(address)".utf8)))
  }

  /// A LocalSend device as Ferry's known peers and messages see it: its alias as a display name
  /// (``displayName(_:)``) with `key`.
  public static func peer(alias: String, key: Fingerprint) -> PeerID {
    (try? PeerID(displayName: displayName(alias), fingerprint: key))
      ?? (try! PeerID(displayName: "LocalSend device", fingerprint: key))
  }

  /// An alias as a display name: controls dropped, cut to 63 bytes on a character boundary,
  /// "LocalSend device" when nothing is left.
  public static func displayName(_ alias: String) -> String {
    var name = ""
    for character in alias {
      guard !character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
      else { continue }
      guard name.utf8.count + String(character).utf8.count <= PeerID.maximumDisplayNameBytes
      else { break }
      name.append(character)
    }
    let trimmed = name.trimmingCharacters(in: .whitespaces)
    return trimmed.isEmpty ? "LocalSend device" : trimmed
  }
}

/// What a LocalSend receiver asks its application about.
public enum LocalSendIncoming: Sendable {
  /// Files: the offer (its real, checked files) and who sends it.
  case files(ResourceOffer, from: LocalSendSender)
  /// A text message.
  case text(LocalSendText)
}

/// A text message a LocalSend sender wants to show: answered once, by ``show()`` or
/// ``decline(reason:)`` (a message nobody answers within ``ResourceOffer/decisionTimeout`` is
/// declined).
public final class LocalSendText: Sendable {
  /// Who sends it.
  public let sender: LocalSendSender
  /// The text (any characters: escape it before a terminal sees it).
  public let text: String
  private let answer: Mutex<(@Sendable (Bool) -> Void)?>
  private let withdrawn = Mutex(false)

  init(sender: LocalSendSender, text: String, answer: @escaping @Sendable (Bool) -> Void) {
    self.sender = sender
    self.text = text
    self.answer = Mutex(answer)
  }

  /// Accepts it: the sender hears it was received. Only the first answer counts.
  ///
  /// - Returns: Whether this was the answer (false: it had been answered, or had timed out).
  @discardableResult
  public func show() -> Bool { respond(true) }

  /// Declines it. Only the first answer counts.
  public func decline(reason: String = "") { _ = respond(false) }

  /// Whether it still waits for an answer.
  public var isPending: Bool { answer.withLock { $0 != nil } }

  /// Whether its sender left before it was answered.
  public var wasWithdrawn: Bool { withdrawn.withLock { $0 } }

  /// Its sender left: no answer counts any more.
  func withdraw() {
    withdrawn.withLock { $0 = true }
    decline()
  }

  private func respond(_ accepted: Bool) -> Bool {
    let answer = self.answer.withLock { answer in
      defer { answer = nil }
      return answer
    }
    answer?(accepted)
    return answer != nil
  }
}
