import Testing

@testable import Ferry
@testable import FerryAgent

/// Consent as a budget: one approval's parts, and which transfer's end ends which part.
@Suite("Approvals: parts and the transfers that carry them")
struct ApprovalsTests {
  static let identity = Identity.generate()
  static let files: [(path: String, size: UInt64)] = [("a.txt", 10), ("b.txt", 20), ("c.txt", 30)]

  /// An approval of `files` (3 files, 60 bytes) by a person, and its sender.
  func approved() throws -> (Approvals, PeerID) {
    let approvals = Approvals()
    let peer = try PeerID(displayName: "laptop", fingerprint: Self.identity.fingerprint)
    let code = VerificationCode(
      keyingMaterial: [1, 2, 3], inviterNonce: [4], advertiserNonce: [5],
      fingerprints: peer.fingerprint, peer.fingerprint)
    approvals.record(
      peer, status: .new, code: code, summary: OfferSummary(items: Self.files), byPolicy: false)
    return (approvals, peer)
  }

  /// The transfer of offer `id` from `peer`.
  func transfer(_ id: OfferID, from peer: PeerID) -> IncomingTransfer {
    IncomingTransfer(
      id: id, peer: peer, files: Self.files,
      progress: TransferProgress(files: Self.files.map { ($0.path, $0.size) })
    ) {}
  }

  @Test(
    "a late end of another transfer (an old link's, or an offer approved apart) never ends the part under way, so its files cannot be admitted twice"
  )
  func staleEndLeavesThePart() throws {
    let (approvals, peer) = try approved()
    let part = OfferID.next()
    #expect(approvals.admit(peer.fingerprint, Self.files, folders: [], offer: part).admitted)
    approvals.started(transfer(part, from: peer))
    approvals.settled(peer.fingerprint, path: "a.txt")

    // Another transfer of the same sender ends, failed and whole: the part goes on.
    let other = transfer(OfferID.next(), from: peer)
    #expect(!approvals.partEnded(other, failed: true).wasThePart)
    #expect(!approvals.partEnded(other, failed: false).wasThePart)
    #expect(approvals.isReceivingPart(peer.fingerprint))
    // So the same files offered again alongside are not the next part.
    let again = OfferID.next()
    #expect(!approvals.admit(peer.fingerprint, Self.files, folders: [], offer: again).admitted)
    // The old link's loss does not end a part whose transfer began either.
    approvals.linkLost(peer.fingerprint)
    #expect(approvals.isReceivingPart(peer.fingerprint))

    // Its own transfer's end does; what it settled is spent, the rest may come again.
    let end = approvals.partEnded(transfer(part, from: peer), failed: true)
    #expect(end.wasThePart)
    #expect(!approvals.isReceivingPart(peer.fingerprint))
    let rest = approvals.admit(peer.fingerprint, Self.files, folders: [], offer: again)
    #expect(rest.admitted)
    #expect(rest.receivedBefore == ["a.txt"])
  }

  @Test("a part whose offer was withdrawn before its transfer began fails with its link")
  func withdrawnBeforeItBegan() throws {
    let (approvals, peer) = try approved()
    #expect(approvals.admit(peer.fingerprint, Self.files, folders: [], offer: .next()).admitted)
    approvals.linkLost(peer.fingerprint)
    #expect(!approvals.isReceivingPart(peer.fingerprint))
    #expect(approvals.admit(peer.fingerprint, Self.files, folders: [], offer: .next()).admitted)
  }
}
