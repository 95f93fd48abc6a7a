import Ferry
import FerryAPI
import FerryAgent
import FerryLocalSend
import Foundation
import Synchronization

/// The daemon's person, as the receiver's decider: each question a sender raises waits here,
/// listed by the API (`GET /v1/offers`) with everything the terminal's prompt shows, until it
/// is answered (`POST /v1/offers/{id}/accept` or `…/decline`, a notification's action), its
/// deadline passes (no answer: declined), or its sender withdraws it. At most
/// ``maximum`` wait at once; past them a question is declined unasked, so that senders cannot
/// pile up questions. Any thread.
package final class OpenOffers: ReceiveDecider {
  /// One open question, as the API shows it.
  package struct Question: Sendable {
    /// Its identifier.
    package let id: String
    /// What the API lists.
    package let offer: Components.Schemas.Offer
    /// When it is declined for want of an answer.
    package let deadline: ContinuousClock.Instant
  }

  /// What happened to the questions, for the desktop notifications.
  package enum Change: Sendable {
    /// A question is waiting.
    case asked(Question)
    /// It is over (answered, withdrawn or timed out).
    case ended(id: String)
  }

  /// What answering a question did.
  package enum Answering: Sendable, Equatable {
    /// It was answered.
    case answered
    /// No open question has that identifier.
    case unknown
  }

  private struct Waiting {
    let question: Question
    let continuation: CheckedContinuation<ConsentAnswer, Never>
  }

  /// The most questions open at once.
  package static let maximum = 32

  private let waiting = Mutex<[String: Waiting]>([:])
  private let changes: @Sendable (Change) -> Void

  /// Open questions, reporting each change to `changes`.
  package init(changes: @escaping @Sendable (Change) -> Void = { _ in }) {
    self.changes = changes
  }

  /// Nobody is decided here without being asked: the policy goes first.
  package func standingAnswer(for sender: SenderFacts) -> StandingAnswer? { nil }

  /// Waits for the answer to `question` (``ReceiveDecider``).
  package func decide(_ question: ConsentQuestion) async -> ConsentAnswer {
    let id = DaemonID.new()
    let open = Question(
      id: id, offer: Self.offer(question, id: id), deadline: question.deadline)
    let answer = await withCheckedContinuation { continuation in
      let taken = waiting.withLock { waiting -> Bool in
        guard waiting.count < Self.maximum else { return false }
        waiting[id] = Waiting(question: open, continuation: continuation)
        return true
      }
      guard taken else { return continuation.resume(returning: .noAnswer) }
      changes(.asked(open))
      // Until it is answered: its deadline, and its sender's withdrawal (looked at twice a
      // second while it is open; nothing runs when no question is).
      Task { [weak self] in
        while let self, self.isOpen(id) {
          if !question.isPending {
            self.end(id, with: .withdrawn)
            return
          }
          if ContinuousClock.now >= question.deadline {
            self.end(id, with: .noAnswer)
            return
          }
          try? await Task.sleep(for: min(.milliseconds(500), question.deadline - .now))
        }
      }
    }
    return answer
  }

  /// Answers question `id`: yes or no.
  package func answer(_ id: String, accept: Bool) -> Answering {
    end(id, with: accept ? .yes : .no) ? .answered : .unknown
  }

  /// The questions open now, oldest deadline first.
  package var open: [Question] {
    waiting.withLock { $0.values.map(\.question) }.sorted { $0.deadline < $1.deadline }
  }

  /// Question `id`, if it is open.
  package func question(_ id: String) -> Question? {
    waiting.withLock { $0[id]?.question }
  }

  private func isOpen(_ id: String) -> Bool {
    waiting.withLock { $0[id] != nil }
  }

  /// Ends question `id` with `answer`; false when it was not open.
  @discardableResult
  private func end(_ id: String, with answer: ConsentAnswer) -> Bool {
    guard let ended = waiting.withLock({ $0.removeValue(forKey: id) }) else { return false }
    ended.continuation.resume(returning: answer)
    changes(.ended(id: id))
    return true
  }

  /// Declines every open question (the daemon is stopping).
  package func withdrawAll() {
    for id in waiting.withLock({ Array($0.keys) }) { end(id, with: .withdrawn) }
  }
}
