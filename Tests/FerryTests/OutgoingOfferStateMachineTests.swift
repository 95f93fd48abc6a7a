import Testing

@testable import Ferry

/// Sending an offer as a pure state machine: what the receiver may answer, and when (docs/
/// PROTOCOL.md §8, OFFER_ACCEPT and FILE_ACK).
@Suite("Outgoing offer state machine")
struct OutgoingOfferStateMachineTests {
  typealias Machine = OutgoingOfferStateMachine

  static func file(
    _ path: String, size: UInt64 = 10, kind: TransferFile.Kind = .file,
    permissions: UInt32 = 0o644
  ) -> TransferFile {
    TransferFile(
      path: path, size: size, modificationSeconds: 0, modificationNanoseconds: 0,
      permissions: permissions, kind: kind)
  }

  static let files = [
    file("a"), file("b"), file("c", size: 0, kind: .folder, permissions: 0o755),
  ]

  @Test("an answer of the wrong length, an offset past a file's size, or a folder held is wrong")
  func wrongAnswers() {
    let answers: [[FileStart]] = [
      [.from(0), .from(0)], [.from(0), .from(11), .from(0)], [.from(0), .from(0), .held],
    ]
    for starts in answers {
      var machine = Machine(files: Self.files)
      #expect(
        machine.accepted(starts)
          == .failure(Machine.Violation("the receiver answered the offer wrongly")))
    }
    var stream = Machine(files: [Self.file("in", size: 0, kind: .stream, permissions: 0o600)])
    let r1 = stream.accepted([.held])
    #expect(r1 != .success([.held]))
  }

  @Test("accepted once; files left out have their verdict at once; a second accept is wrong")
  func acceptedOnce() {
    var machine = Machine(files: Self.files)
    #expect(machine.starts == nil)
    let r2 = machine.accepted([.held, .skip, .from(0)])
    #expect(r2 == .success([.held, .skip, .from(0)]))
    #expect(machine.slots[1].result?.status == .skipped)
    #expect(machine.slots[0].held && !machine.slots[2].held)
    #expect(
      machine.accepted([.from(0), .from(0), .from(0)])
        == .failure(Machine.Violation("the receiver accepted the offer twice")))
  }

  @Test(
    "FILE_ACK: not before the answer, not twice, not for a file left out; identical only for a held file whose digest went"
  )
  func acknowledgements() {
    var machine = Machine(files: Self.files)
    #expect(
      machine.acknowledged(0, .stored, reason: "")
        == .violation("the receiver acknowledged file 0 out of turn"))
    _ = machine.accepted([.held, .skip, .from(0)])
    let r3 = machine.acknowledged(1, .stored, reason: "")
    #expect(r3 != .verdict(index: 1))
    let r4 = machine.acknowledged(2, .identical, reason: "")
    #expect(r4 != .verdict(index: 2))
    let r5 = machine.acknowledged(0, .identical, reason: "")
    #expect(r5 != .verdict(index: 0))
    machine.computed(0, digest: [1, 2], took: .seconds(3))
    let r6 = machine.acknowledged(0, .identical, reason: "")
    #expect(r6 == .verdict(index: 0))
    #expect(machine.slots[0].result?.digest == [1, 2])
    let r7 = machine.acknowledged(0, .stored, reason: "")
    #expect(r7 != .verdict(index: 0))
    let r8 = machine.acknowledged(9, .stored, reason: "")
    #expect(r8 != .verdict(index: 9))
    let r9 = machine.next()
    #expect(r9 == .wait)
    let r10 = machine.acknowledged(2, .stored, reason: "")
    #expect(r10 == .verdict(index: 2))
    let r11 = machine.next()
    #expect(r11 == .done)
  }

  @Test(
    "a held file may be asked for whole once; the sending task takes it, then waits for its verdict"
  )
  func askedWhole() {
    var machine = Machine(files: [Self.file("h"), Self.file("x")])
    _ = machine.accepted([.held, .from(0)])
    let r12 = machine.acknowledged(1, .differs, reason: "")
    #expect(r12 != .askedWhole(index: 1))
    let r13 = machine.acknowledged(0, .differs, reason: "")
    #expect(r13 == .askedWhole(index: 0))
    let r14 = machine.acknowledged(0, .differs, reason: "")
    #expect(r14 != .askedWhole(index: 0))
    let r15 = machine.next()
    #expect(r15 == .resend([0]))
    let r16 = machine.next()
    #expect(r16 == .wait)
    _ = machine.acknowledged(0, .stored, reason: "")
    _ = machine.acknowledged(1, .stored, reason: "")
    let r17 = machine.next()
    #expect(r17 == .done)
  }

  @Test("the first failure is the offer's; later ones are its echo, and late answers are ignored")
  func failures() {
    var machine = Machine(files: Self.files)
    _ = machine.accepted([.from(0), .from(0), .from(0)])
    let r18 = machine.fail(.cancelled)
    #expect(r18)
    let again = machine.fail(.peerDisconnected(reason: "x"))
    #expect(!again)
    #expect(machine.failure == .cancelled)
    let r19 = machine.next()
    #expect(r19 == .failed(.cancelled))
    let r20 = machine.acknowledged(0, .stored, reason: "")
    #expect(r20 == nil)
    #expect(machine.isAccepted)
  }

  @Test(
    "patience: the receiver's decision before the answer, then the stall limit plus this side's hashing of held files still compared"
  )
  func patience() {
    var machine = Machine(files: [Self.file("h"), Self.file("x")])
    #expect(machine.patience(stall: .seconds(60), decision: .seconds(120)) == .seconds(180))
    _ = machine.accepted([.held, .from(0)])
    machine.computed(0, digest: [1], took: .seconds(7))
    #expect(machine.patience(stall: .seconds(60), decision: .seconds(120)) == .seconds(67))
    _ = machine.acknowledged(0, .identical, reason: "")
    #expect(machine.patience(stall: .seconds(60), decision: .seconds(120)) == .seconds(60))
  }
}
