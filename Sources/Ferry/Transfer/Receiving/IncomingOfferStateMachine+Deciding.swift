import Foundation

/// The offer arrives, its paths are checked, and it is asked about (or accepted at once).
extension IncomingOfferStateMachine {
  /// The offer arrived: its paths are checked on their bytes (``RelativePath``); an unsafe one
  /// refuses it whole before anyone is asked. Otherwise it is asked about or prepared.
  mutating func start(_ reception: Reception, into actions: inout [Action]) {
    guard case .idle = state else { return }
    var slots: [FileSlot] = []
    slots.reserveCapacity(offered.count)
    do throws(PathError) {
      var paths: [RelativePath] = []
      paths.reserveCapacity(offered.count)
      for file in offered { paths.append(try RelativePath(validating: file.path)) }
      try RelativePath.checkTree(paths)
      for (file, path) in zip(offered, paths) { slots.append(FileSlot(offered: file, path: path)) }
    } catch {
      state = .ended
      return refuse(.unsafePath(error), into: &actions)
    }
    switch reception {
    case .automatic(let options):
      prepare(slots, options, into: &actions)
    case .asking:
      state = .deciding(Offer(slots: slots))
      actions.append(.ask)
    }
  }

  /// The application answered.
  mutating func decided(_ decision: Decision, into actions: inout [Action]) {
    guard case .deciding(let offer) = state else { return }
    switch decision {
    case .accept(let options):
      prepare(offer.slots, options, into: &actions)
    case .decline(let reason):
      state = .ended
      actions.append(
        .reset(reason: reason.isEmpty ? "declined by the receiver" : reason, cause: .declined))
      actions.append(.closeChannel)
    }
  }

  /// Nobody answered in time: declined.
  mutating func decisionTimedOut(into actions: inout [Action]) {
    guard case .deciding = state else { return }
    actions.append(.withdrawQuestion)
    decided(.decline("no decision in time"), into: &actions)
  }

  private mutating func prepare(
    _ slots: [FileSlot], _ options: ReceiveOptions, into actions: inout [Action]
  ) {
    state = .staging(Staging(slots: slots, options: options))
    actions.append(.openStaging(options))
  }
}
