/// Which held file of an accepted offer is hashed here, and when (``IncomingOfferStateMachine``).
extension IncomingOfferStateMachine {
  /// The held files of an accepted offer whose copy this side hashes, one at a time, in the
  /// order the sender hashes its files; and the one being hashed, while the sender's silence
  /// does not count. Pure: the machine performs what it says.
  struct HeldComparisons: Sendable {
    /// Held files whose copy is still to be hashed here, the next one last: in the order the
    /// sender hashes its files, so that each digest is compared as it comes.
    private(set) var toHash: [Int]
    /// The held file being hashed here, if one is: the sender's silence does not count
    /// meanwhile (this side's own work).
    private(set) var hashing: Int?

    /// Held files `toHash`, the next one last; none being hashed.
    init(toHash: [Int]) {
      self.toHash = toHash
    }

    /// Whether a held file is being hashed here.
    var isHashing: Bool { hashing != nil }

    /// The next held file to hash, which is then the one being hashed: none while one is. A held
    /// file that no longer waits for this side's digest in `slots` (the sender chose to send it
    /// whole instead) is passed over.
    mutating func next(in slots: [FileSlot]) -> Int? {
      guard hashing == nil else { return nil }
      while let index = toHash.popLast() {
        guard case .comparing(let comparison) = slots[index].stage, comparison.own == nil
        else { continue }
        hashing = index
        return index
      }
      return nil
    }

    /// This side's hash of held file `index` is done: whether it is the one being hashed (none
    /// is now). A hash left by ``leave(_:)`` is not.
    mutating func hashed(_ index: Int) -> Bool {
      guard hashing == index else { return false }
      hashing = nil
      return true
    }

    /// The comparison of held file `index` stops: whether its hash was under way, and is left
    /// (none is being hashed now; its result, when it comes, is not taken).
    mutating func leave(_ index: Int) -> Bool {
      guard hashing == index else { return false }
      hashing = nil
      return true
    }
  }
}
