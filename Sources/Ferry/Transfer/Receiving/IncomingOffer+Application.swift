import CFerrySystem
import Dispatch
import Foundation
import NIOCore
import Synchronization

/// What the application hears of the offer: its question, its acceptance, each file's verdict
/// and a refusal.
extension IncomingOffer {
  func ask() {
    guard case .asking(let open, let deliver) = reception else { return }
    let question = ResourceOffer(
      id: id, peer: peer, files: offered.map { ($0.path, $0.size) },
      folders: Set(offered.filter(\.isFolder).map(\.path)),
      streamed: Set(offered.filter(\.isStreamed).map(\.path)), question: open
    ) { [weak self] decision in
      guard let self else { return }
      let answer: Machine.Decision
      switch decision {
      case .accept(let options): answer = .accept(options)
      case .decline(let reason): answer = .decline(reason)
      }
      self.handle { $0.decided(answer, into: &$1) }
    }
    self.question = question
    deliver(question)
    executor.run(after: ResourceOffer.decisionTimeout) { [weak self] in
      self?.run { $0.decisionTimedOut(into: &$1) }
    }
  }

  func reportAccepted(skipped: [Int]) {
    let progress = TransferProgress(
      files: offered.map { ($0.path, $0.size) }, streamed: offered.map(\.isStreamed))
    self.progress = progress
    let transfer = IncomingTransfer(
      id: id, peer: peer, files: offered.map { ($0.path, $0.size) },
      folders: offered.count { $0.isFolder },
      streamed: Set(offered.filter(\.isStreamed).map(\.path)), resumable: resumes,
      progress: progress
    ) { [weak self] in
      self?.cancelFromApplication()
    }
    progress.overall.cancellationHandler = { [weak self] in
      self?.cancelFromApplication()
    }
    self.transfer = transfer
    for index in skipped {
      progress.complete(index)
      emit(.finished(name: offered[index].path, peer: peer, result: .success(nil), digest: nil))
    }
    for (index, slot) in machine.slots.enumerated() {
      if case .receive(let offset) = slot.plan, offset > 0 {
        progress.advance(index, to: offset, uncrossed: offset)
      }
    }
    emit(.offerReceived(transfer))
  }

  /// File `index`'s verdict, for the application.
  func report(_ conclusion: Machine.Action.Conclusion) {
    let index = conclusion.index
    var failed = false
    if case .failure = conclusion.result { failed = true }
    progress?.complete(index, failed: failed)
    if conclusion.identical, case .success(let url?) = conclusion.result,
      let digest = conclusion.digest
    {
      emit(.identical(name: offered[index].path, peer: peer, at: url, digest: digest))
    } else {
      emit(
        .finished(
          name: offered[index].path, peer: peer, result: conclusion.result,
          digest: conclusion.digest))
    }
  }

  func reportRefused(_ error: ResourceError) {
    FerryLogging.logger.notice(
      "refused an offer of \(Quantity.count(offered.count, "file")) from \(peer.displayName): \(error)"
    )
    // Never asked about: its question closes here.
    if question == nil, case .asking(let open, _) = reception { open.close() }
    emit(.offerRefused(peer: peer, files: offered.count, error: .resource(error)))
  }
}
