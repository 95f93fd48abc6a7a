import Ferry
import Synchronization

/// The invitations `ferry receive` has not answered yet (being asked about, or waiting their
/// turn), so that Ctrl-C can decline them with "the receiver stopped": the sender then hears a
/// decline (exit 4), not a connection that vanished. Any thread.
final class OpenInvitations: Sendable {
  private let open = Mutex<[ObjectIdentifier: Invitation]>([:])

  /// Holds `invitation` until ``remove(_:)``.
  func add(_ invitation: Invitation) {
    open.withLock { $0[ObjectIdentifier(invitation)] = invitation }
  }

  /// Lets `invitation` go: it was answered or withdrawn.
  func remove(_ invitation: Invitation) {
    _ = open.withLock { $0.removeValue(forKey: ObjectIdentifier(invitation)) }
  }

  /// Declines every invitation still open with `reason`; how many were.
  func declineAll(reason: String) -> Int {
    let invitations = open.withLock { open in
      defer { open.removeAll() }
      return Array(open.values)
    }
    for invitation in invitations where invitation.isPending {
      invitation.decline(reason: reason)
    }
    return invitations.count
  }
}
