import Ferry
import Synchronization

/// The unpublished listener behind ``MCSession/nearbyConnectionData(forPeer:withCompletionHandler:)``:
/// a Ferry ``Advertiser`` that only listens, and accepts invitations from the peers
/// ``MCSession/connectPeer(_:withNearbyConnectionData:)`` named (declining everyone else).
final class NearbyListener: Sendable {
  private let advertiser: Advertiser
  private let expected = Mutex<Set<Fingerprint>>([])
  private let started = Atomic<Bool>(false)

  init(session: MCSession) {
    // The session's own identity and name: valid, since the session was made with them.
    advertiser = try! Advertiser(session: session.ferrySession)
  }

  /// Invitations from `fingerprint` are accepted from now on.
  func expect(_ fingerprint: Fingerprint) {
    _ = expected.withLock { $0.insert(fingerprint) }
  }

  /// Invitations from `fingerprint` are declined from now on.
  func forget(_ fingerprint: Fingerprint) {
    _ = expected.withLock { $0.remove(fingerprint) }
  }

  /// Listens (once; later calls return the same port) and answers invitations for `session`.
  ///
  /// - Throws: ``MCError`` when the port cannot be bound.
  func listen(for session: MCSession) async throws -> UInt16 {
    let port: UInt16
    do {
      port = try await advertiser.listen()
    } catch {
      throw MCError(error)
    }
    guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return port }
    let invitations = advertiser.invitations
    let owner = WeakReference(session)
    Task { [self] in
      for await invitation in invitations {
        guard let session = owner.object,
          expected.withLock({ $0.contains(invitation.peer.fingerprint) })
        else {
          invitation.decline(reason: "not expected")
          continue
        }
        let ferry = session.ferrySession
        session.attempt(with: session.object(for: invitation.peer)) {
          try await invitation.accept(into: ferry)
        }
      }
    }
    return port
  }

  /// Stops listening.
  func stop() {
    advertiser.stop()
  }
}
