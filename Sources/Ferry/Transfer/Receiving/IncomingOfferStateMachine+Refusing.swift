import Foundation

/// Refusing an offer before anything of it is written, and what the sender is told of why.
extension IncomingOfferStateMachine {
  /// Refuses the offer before anything of it is written (an unsafe path, no room, an unsafe
  /// staging folder); gives back the names of `releasing` it claimed.
  mutating func refuse(
    _ error: ResourceError, into actions: inout [Action], releasing slots: [FileSlot] = []
  ) {
    actions.append(.log("refused: \(error)"))
    actions.append(.withdrawQuestion)
    actions.append(
      .reset(reason: Self.peerReason(error, refusing: true), cause: .refused(error)))
    actions.append(.closeChannel)
    let claimed = slots.filter(\.claimed).map(\.name)
    if !claimed.isEmpty { actions.append(.releaseNames(claimed)) }
    actions.append(.cleanUp)
    actions.append(.reportRefused(error))
  }

  /// What the sender is told of `error`, which refused (`refusing`) or stopped the offer: its
  /// own paths (an unsafe path), the sizes (too many, too large, no room) and a corrupt file
  /// as they are; anything about the destination and its files only as a failure of the
  /// receiver, the detail staying with the receiving user.
  static func peerReason(_ error: ResourceError, refusing: Bool) -> String {
    switch error {
    case .unsafePath, .insufficientSpace, .integrityCheckFailed, .tooManyFiles, .tooLarge:
      return error.description
    case .unsafeDestination, .cannotWrite, .cannotRead, .unsupportedByPeer, .streamInterrupted:
      return refusing
        ? "the receiver cannot store files where it receives them (its user is told why)"
        : "the receiver could not write the files (its user is told why)"
    }
  }
}
