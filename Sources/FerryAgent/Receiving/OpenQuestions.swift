import Ferry
import Synchronization

/// What a ``Receiver`` has not answered yet — invitations, offers and LocalSend texts being
/// asked about or waiting their turn — so that ``Receiver/stop()`` declines them with "the
/// receiver stopped": their senders hear a decline, not a connection that vanished. Any
/// thread.
final class OpenQuestions: Sendable {
  /// One open question: whether it is still pending, and how to decline it.
  private struct Question: Sendable {
    let isPending: @Sendable () -> Bool
    let decline: @Sendable (String) -> Void
  }

  private let open = Mutex<[ObjectIdentifier: Question]>([:])

  /// Holds `invitation` until ``remove(_:)``.
  func add(_ invitation: Invitation) {
    add(
      ObjectIdentifier(invitation), isPending: { invitation.isPending },
      decline: { invitation.decline(reason: $0) })
  }

  /// Holds `offer` until ``remove(_:)``.
  func add(_ offer: ResourceOffer) {
    add(
      ObjectIdentifier(offer), isPending: { offer.isPending },
      decline: { offer.decline(reason: $0) })
  }

  /// Holds the question `id` until ``remove(_:)``.
  func add(
    _ id: ObjectIdentifier, isPending: @escaping @Sendable () -> Bool,
    decline: @escaping @Sendable (String) -> Void
  ) {
    open.withLock { $0[id] = Question(isPending: isPending, decline: decline) }
  }

  /// Lets the question of `object` go: it was answered or withdrawn.
  func remove(_ object: AnyObject) {
    _ = open.withLock { $0.removeValue(forKey: ObjectIdentifier(object)) }
  }

  /// Declines every question still open with `reason`; how many were.
  func declineAll(reason: String) -> Int {
    let questions = open.withLock { open in
      defer { open.removeAll() }
      return Array(open.values)
    }
    for question in questions where question.isPending() {
      question.decline(reason)
    }
    return questions.count
  }
}
