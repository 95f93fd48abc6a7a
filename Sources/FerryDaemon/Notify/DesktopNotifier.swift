import Ferry
import FerryAgent
import Foundation
import Synchronization

/// The daemon's desktop notifications (org.freedesktop.Notifications on the session bus): a
/// question waiting for a person raises one with Accept and Decline — who asks, what, how much,
/// the verification code — resident until it is answered, withdrawn or out of time; a send
/// from the outbox delivered or failed raises one of its own. An action invoked answers the
/// question (``OpenOffers``). Everything from a peer is shown escaped, and as plain text where
/// the server reads markup. Without a session bus (or a notification server) nothing is shown
/// and nothing breaks: the API still asks. Any thread.
package final class DesktopNotifier: Sendable {
  private static let service = "org.freedesktop.Notifications"
  private static let path = "/org/freedesktop/Notifications"

  private let bus: SessionBus
  private let offers: OpenOffers
  /// Whether the server reads markup in bodies (then `&`, `<` and `>` are escaped).
  private let markup = Mutex(true)
  /// The notification server's unique name on the bus (who owns
  /// org.freedesktop.Notifications): the only sender whose actions are heard.
  private let server = Mutex<String?>(nil)
  /// Notification ids by question id, and back; those shown with Decline only.
  private let shown = Mutex<
    (byQuestion: [String: UInt32], byNotification: [UInt32: String], declineOnly: Set<UInt32>)
  >(([:], [:], []))

  /// Notifications on the session bus at `address` (nil: `DBUS_SESSION_BUS_ADDRESS`),
  /// answering `offers`; nil when there is no session bus.
  package init?(address: String? = nil, offers: OpenOffers) {
    // Only the notification server's signals: another client of the bus cannot press Accept.
    guard
      let bus = SessionBus(
        address: address,
        match: "type='signal',sender='\(Self.service)',path='\(Self.path)',"
          + "interface='\(Self.service)'")
    else { return nil }
    self.bus = bus
    self.offers = offers
    bus.call(Self.service, Self.path, Self.service, "GetCapabilities", []) {
      [weak self] reply in
      guard case .values(let values) = reply, case .strings(let capabilities)? = values.first
      else { return }
      self?.markup.withLock { $0 = capabilities.contains("body-markup") }
    }
    bus.call(
      "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
      [.string(Self.service)]
    ) { [weak self] reply in
      guard case .values(let values) = reply, case .string(let owner)? = values.first else {
        return
      }
      self?.server.withLock { $0 = owner }
    }
    Task { [weak self] in
      for await signal in bus.signals {
        self?.heard(signal)
      }
    }
  }

  /// Stops (the notifications still shown are closed).
  package func close() {
    let ids = shown.withLock { Array($0.byNotification.keys) }
    for id in ids {
      bus.call(Self.service, Self.path, Self.service, "CloseNotification", [.uint32(id)])
    }
    bus.close()
  }

  /// A question changed: shown, or taken down.
  package func changed(_ change: OpenOffers.Change) {
    switch change {
    case .asked(let question):
      ask(question)
    case .ended(let id):
      let notification = shown.withLock { shown -> UInt32? in
        guard let notification = shown.byQuestion.removeValue(forKey: id) else { return nil }
        shown.byNotification[notification] = nil
        shown.declineOnly.remove(notification)
        return notification
      }
      if let notification {
        bus.call(
          Self.service, Self.path, Self.service, "CloseNotification", [.uint32(notification)])
      }
    }
  }

  /// A send from the outbox ended: `summary` and `body` (Ferry's words around a peer's name).
  package func sendEnded(summary: String, body: String) {
    notify(summary: summary, body: body, actions: [], resident: false) { _ in }
  }

  private func ask(_ question: OpenOffers.Question) {
    let offer = question.offer
    let who = printable(offer.sender.name)
    var what: String
    switch offer.kind {
    case .text: what = "a text message"
    case .invitation where offer.text: what = "a text message"
    default:
      what =
        offer.files.map { Quantity.count($0, "file") } ?? "files"
      if let bytes = offer.bytes { what += " (\(Quantity.bytes(UInt64(bytes))))" }
    }
    var lines = ["\(who) (\(offer.sender.status.rawValue)) wants to send \(what)."]
    switch offer.reason {
    case .differs?: lines.append("Not the files it announced.")
    case .unannounced?: lines.append("It did not say what before.")
    case .later?: lines.append("More files after the first.")
    case nil: break
    }
    if !offer.names.isEmpty {
      lines.append(offer.names.prefix(5).map { printable($0) }.joined(separator: ", "))
    }
    if let code = offer.code { lines.append("Verification code: \(code)") }
    if let fingerprint = offer.sender.fingerprint {
      lines.append("Key \(fingerprint.prefix(16))")
    } else {
      lines.append("It proves no key.")
    }
    // A name that belongs to another key here is never accepted with one click: the key is
    // checked first, and `ferry accept ID` says yes.
    let suspicious = offer.previousFingerprint != nil
    if let previous = offer.previousFingerprint {
      lines.append(
        "The name is known here with another key (\(previous.prefix(16))): check before "
          + "accepting with ferry accept \(offer.id).")
    }
    // Keys that name the question: an action meant for another notification (another
    // application's, or one of a notification server that restarted and reuses ids) is
    // not this one's.
    let (accept, decline) = ("accept:\(question.id)", "decline:\(question.id)")
    notify(
      summary: "Ferry: \(who) wants to send", body: lines.joined(separator: "\n"),
      actions: suspicious ? [decline, "Decline"] : [accept, "Accept", decline, "Decline"],
      resident: true
    ) { [weak self] id in
      guard let self else { return }
      // Answered or gone while the notification was being shown: taken down at once.
      guard self.offers.question(question.id) != nil else {
        self.bus.call(Self.service, Self.path, Self.service, "CloseNotification", [.uint32(id)])
        return
      }
      self.shown.withLock {
        $0.byQuestion[question.id] = id
        $0.byNotification[id] = question.id
        if suspicious { $0.declineOnly.insert(id) }
      }
    }
  }

  private func notify(
    summary: String, body: String, actions: [String], resident: Bool,
    shown: @escaping @Sendable (UInt32) -> Void
  ) {
    let escaped = markup.withLock { $0 } ? Self.escapeMarkup(body) : body
    var hints: [(String, SessionBus.HintValue)] = [("urgency", .byte(1))]
    if resident { hints.append(("resident", .bool(true))) }
    bus.call(
      Self.service, Self.path, Self.service, "Notify",
      [
        .string("Ferry"), .uint32(0), .string(""), .string(summary), .string(escaped),
        .strings(actions), .hints(hints), .int32(resident ? 0 : -1),
      ]
    ) { reply in
      guard case .values(let values) = reply, case .uint32(let id)? = values.first else { return }
      shown(id)
    }
  }

  /// A signal: acted on only when the notification server sent it — a signal addressed to
  /// this connection by any client of the bus arrives whatever the match rule says, and must
  /// not answer a question. (A sender that is not the owner known so far is checked against
  /// the bus: the server may have restarted.)
  private func heard(_ signal: SessionBus.Signal) {
    guard signal.interface == Self.service, signal.path == Self.path else { return }
    if server.withLock({ $0 }) == signal.sender { return act(on: signal) }
    bus.call(
      "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
      [.string(Self.service)]
    ) { [weak self] reply in
      guard let self, case .values(let values) = reply, case .string(let owner)? = values.first
      else { return }
      // (Notifications a restarted server reuses the ids of are told apart by their action
      // keys, which name the question.)
      self.server.withLock { $0 = owner }
      if owner == signal.sender { self.act(on: signal) }
    }
  }

  private func act(on signal: SessionBus.Signal) {
    switch signal.member {
    case "ActionInvoked":
      guard signal.values.count >= 2, case .uint32(let id) = signal.values[0],
        case .string(let action) = signal.values[1],
        let question = shown.withLock({ $0.byNotification[id] })
      else { return }
      switch action {
      case "accept:\(question)" where !shown.withLock({ $0.declineOnly.contains(id) }):
        _ = offers.answer(question, accept: true)
      case "decline:\(question)": _ = offers.answer(question, accept: false)
      default: break
      }
    case "NotificationClosed":
      // Dismissed: the question stays open (the API and `ferry offers` still answer it).
      guard case .uint32(let id)? = signal.values.first else { return }
      shown.withLock { shown in
        if let question = shown.byNotification.removeValue(forKey: id) {
          shown.byQuestion[question] = nil
        }
        shown.declineOnly.remove(id)
      }
    default:
      break
    }
  }

  /// `text` with the characters of the servers' markup escaped.
  static func escapeMarkup(_ text: String) -> String {
    text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
  }
}
