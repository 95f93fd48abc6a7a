import Ferry
import FerryAgent
import Synchronization

/// The daemon's receive policy, which the API (the page's switch) may change while it runs:
/// the configured one at start; then ask about every sender, let trusted peers in and ask
/// about others, or let trusted peers in only. Keys the config accepts by fingerprint
/// (`accept_from`) stay accepted in every mode but `yes`. What no standing rule decides goes to
/// `asker` (the questions waiting for a person). The switch lasts for this run of the daemon.
/// Any thread.
package final class AcceptSwitch: ReceiveDecider {
  /// Whom it lets in without asking, as `GET /v1/status` says it.
  package enum Mode: String, Sendable, CaseIterable {
    /// Nobody but the configured keys: every other sender is asked about.
    case ask
    /// Trusted peers (and the configured keys); others are asked about.
    case trusted
    /// Trusted peers (and the configured keys) only; others are declined unasked.
    case trustedOnly = "trusted-only"
    /// Everyone (`accept = "yes"` in the config; never set through the API).
    case yes
  }

  private let policy: Mutex<ReceivePolicy>
  private let keys: [ReceivePolicy.AcceptedKey]
  private let asker: any ReceiveDecider

  /// A switch starting at `configured`, asking `asker` what no rule decides.
  package init(_ configured: ReceivePolicy, asker: any ReceiveDecider) {
    policy = Mutex(configured)
    if case .senders(let keys, _, _) = configured { self.keys = keys } else { keys = [] }
    self.asker = asker
  }

  /// The policy now.
  package var current: ReceivePolicy { policy.withLock { $0 } }

  /// Whom it lets in now (an accept list without trust says `ask`).
  package var mode: Mode {
    switch current {
    case .ask: .ask
    case .everyone: .yes
    case .senders(_, let trusted, let askOthers):
      trusted ? (askOthers ? .trusted : .trustedOnly) : .ask
    }
  }

  /// Switches to `mode` (not ``Mode/yes``: letting everyone in is the config's to say).
  /// Returns false for ``Mode/yes``.
  @discardableResult
  package func set(_ mode: Mode) -> Bool {
    let next: ReceivePolicy
    switch mode {
    case .ask: next = keys.isEmpty ? .ask : .senders(keys, trusted: false, askOthers: true)
    case .trusted: next = .senders(keys, trusted: true, askOthers: true)
    case .trustedOnly: next = .senders(keys, trusted: true, askOthers: false)
    case .yes: return false
    }
    policy.withLock { $0 = next }
    return true
  }

  package func standingAnswer(for sender: SenderFacts) -> StandingAnswer? {
    current.standingAnswer(for: sender)
  }

  package func decide(_ question: ConsentQuestion) async -> ConsentAnswer {
    await asker.decide(question)
  }
}
