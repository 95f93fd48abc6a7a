import Ferry
import Foundation

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
  let advertiser = try Advertiser(
    identity: identity, displayName: name, serviceType: type, knownPeers: knownPeers,
    maximumPendingInvitations: maximumPending, timeouts: timeouts)
  _ = try await advertiser.start()
  let session = try Session(identity: identity, displayName: name, timeouts: timeouts)
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

/// The next invitation an advertiser yields, within `timeout`.
func nextInvitation(_ advertiser: Advertiser, timeout: Duration = .seconds(10)) async
  -> Invitation?
{
  await withTaskGroup(of: Invitation?.self) { group in
    group.addTask {
      for await invitation in advertiser.invitations { return invitation }
      return nil
    }
    group.addTask {
      try? await Task.sleep(for: timeout)
      return nil
    }
    let first = await group.next() ?? nil
    group.cancelAll()
    return first
  }
}
