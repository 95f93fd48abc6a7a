import Ferry
import Foundation
import Synchronization
import Testing

/// A fresh identity in memory.
func makeIdentity() -> Identity {
  Identity.generate()
}

/// An advertiser with a listener, started on `type`, and its session.
func startAdvertiser(
  _ name: String, type: ServiceType, maximumPending: Int = 8, knownPeers: KnownPeers? = nil,
  timeouts: ConnectionTimeouts = .init()
) async throws -> (advertiser: Advertiser, session: Session, identity: Identity) {
  let identity = makeIdentity()
  let session = try Session(identity: identity, displayName: name, timeouts: timeouts)
  // One identity and name for both, taken from the session.
  let advertiser = try Advertiser(
    session: session, serviceType: type, knownPeers: knownPeers,
    maximumPendingInvitations: maximumPending)
  _ = try await advertiser.start()
  #expect(advertiser.peer == session.myPeer)
  #expect(advertiser.peer.displayName == session.myPeer.displayName)
  return (advertiser, session, identity)
}

/// Waits for the browser to find `name`.
func discover(_ name: String, with events: EventRecorder<BrowserEvent>) async throws
  -> DiscoveredPeer
{
  guard let found = await events.first(where: { $0.isFound(name) }) else {
    throw TestFailure("\(name) was not found: \(events.all.map(\.element))")
  }
  return found.record.element.peer
}

/// A failure message as an error.
struct TestFailure: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// One consumer per advertiser's invitation stream: an `AsyncStream` has a single consumer,
/// and cancelling a task that iterates it finishes it, so tests never iterate it themselves.
final class InvitationInbox: Sendable {
  /// Keyed by identity; the inbox keeps its advertiser alive so that the identifier cannot be
  /// reused by a later advertiser at the same address.
  private static let inboxes = Mutex<[ObjectIdentifier: InvitationInbox]>([:])
  private let advertiser: Advertiser
  private let recorder: EventRecorder<Invitation>
  private let taken = Mutex(0)

  private init(_ advertiser: Advertiser) {
    self.advertiser = advertiser
    recorder = EventRecorder(advertiser.invitations)
  }

  /// The inbox of `advertiser`, created on first use.
  static func of(_ advertiser: Advertiser) -> InvitationInbox {
    inboxes.withLock { inboxes in
      if let inbox = inboxes[ObjectIdentifier(advertiser)] { return inbox }
      let inbox = InvitationInbox(advertiser)
      inboxes[ObjectIdentifier(advertiser)] = inbox
      return inbox
    }
  }

  /// The next invitation not yet taken, within `timeout`.
  func next(timeout: Duration) async -> Invitation? {
    let start = taken.withLock { $0 }
    guard let found = await recorder.first(after: start, timeout: timeout, where: { _ in true })
    else { return nil }
    taken.withLock { $0 = found.index + 1 }
    return found.record.element
  }
}

/// The next invitation an advertiser yields, within `timeout`.
func nextInvitation(_ advertiser: Advertiser, timeout: Duration = Harness.patience) async
  -> Invitation?
{
  await InvitationInbox.of(advertiser).next(timeout: timeout)
}

/// The verification codes an inviter was shown before the answer, in order: pass ``record`` as
/// an invitation's `onVerificationCode`.
final class ShownCodes: Sendable {
  private let codes = Mutex<[VerificationCode]>([])

  /// Records one code.
  var record: @Sendable (PeerID, VerificationCode) -> Void {
    { [self] _, code in codes.withLock { $0.append(code) } }
  }

  /// Every code recorded so far.
  var all: [VerificationCode] { codes.withLock { $0 } }
}
