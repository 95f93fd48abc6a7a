import Ferry
import Synchronization

/// The unpublished listener behind ``MCSession/nearbyConnectionData(forPeer:withCompletionHandler:)``:
/// a Ferry ``Advertiser`` that only listens, and accepts invitations from the peers
/// ``MCSession/connectPeer(_:withNearbyConnectionData:)`` named (declining everyone else).
final class NearbyListener: Sendable {
  private let advertiser: Advertiser
  private let expected = Mutex<Set<Fingerprint>>([])
  /// The listen every call awaits (two binding at once would open two ports, one of them
  /// never closed); nil again after it failed, so that a later call tries again.
  private let binding = Mutex<Task<UInt16, any Error>?>(nil)
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
    let advertiser = self.advertiser
    let task = binding.withLock { binding -> Task<UInt16, any Error> in
      if let binding { return binding }
      let task = Task { () async throws -> UInt16 in
        do throws(DiscoveryError) {
          return try await advertiser.listen()
        } catch {
          throw MCError(error)
        }
      }
      binding = task
      return task
    }
    let port: UInt16
    do {
      port = try await task.value
    } catch {
      binding.withLock { if $0 == task { $0 = nil } }
      throw error
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
