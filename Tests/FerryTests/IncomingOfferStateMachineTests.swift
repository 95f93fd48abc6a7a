import FerryWire
import Foundation
import Testing

@testable import Ferry

/// Receiving an offer as a pure state machine: each state × event, with the actions it returns
/// (docs/PROTOCOL.md §8). No disk, no clock, no channel: the tests feed the results a driver
/// would.
@Suite("Incoming offer state machine")
struct IncomingOfferStateMachineTests {
  typealias Machine = IncomingOfferStateMachine
  typealias Action = IncomingOfferAction

  static let sender = try! PeerID(
    displayName: "sender", fingerprint: Identity.generate().fingerprint)
  static let now = ContinuousClock.now
  static let destination = URL(fileURLWithPath: "/tmp/destination")

  static func file(
    _ path: String, size: UInt64 = 10, kind: TransferFile.Kind = .file,
    permissions: UInt32 = 0o644
  ) -> TransferFile {
    TransferFile(
      path: path, size: size, modificationSeconds: 0, modificationNanoseconds: 0,
      permissions: permissions, kind: kind)
  }

  static func make(
    _ files: [TransferFile], openFiles: Int = 1, holdable: Set<Int>? = nil
  ) -> Machine {
    Machine(
      files: files,
      configuration: Machine.Configuration(
        sender: sender, checksum: .xxh3, holdsFiles: true, openFiles: openFiles,
        holdable: holdable, stall: .seconds(60), emptyDigest: ContentHasher(.xxh3).finalize()))
  }

  /// Each action in short: its name, and what matters of it.
  static func names(_ actions: [Action]) -> [String] {
    actions.map { action in
      switch action {
      case .ask: "ask"
      case .withdrawQuestion: "withdraw"
      case .reportAccepted(let skipped): "accepted\(skipped)"
      case .reportStarted(let index): "started(\(index))"
      case .conclude(let conclusion):
        switch conclusion.result {
        case .success: "done(\(conclusion.index)\(conclusion.identical ? ",identical" : ""))"
        case .failure(let error): "failed(\(conclusion.index): \(error))"
        }
      case .reportRefused(let error): "refused(\(error))"
      case .openStaging: "openStaging"
      case .waitForClaims(let busy): "wait\(busy.sorted())"
      case .nameFresh(let indices): "fresh\(indices)"
      case .survey(let questions): "survey\(questions.map(\.index))"
      case .reserve(let bytes, let purpose): "reserve(\(bytes), \(purpose))"
      case .release(let bytes): "release(\(bytes))"
      case .releaseNames(let names): "releaseNames(\(names.count))"
      case .writeMeta(let indices): "meta\(indices)"
      case .hashHeld(let index): "hash(\(index))"
      case .stopHashing(let index): "stopHash(\(index))"
      case .checkHeldCopy(let index): "checkCopy(\(index))"
      case .open(let index): "open(\(index))"
      case .write(let index): "write(\(index))"
      case .land(let index, _): "land(\(index))"
      case .makeFolder(let index): "makeFolder(\(index))"
      case .discard(let index): "discard(\(index))"
      case .removeStaged(let name): "remove(\(name))"
      case .sendAccept(let starts): Self.acceptance(starts)
      case .queueAck(let index, let status, _): "ack(\(index), \(status))"
      case .flushAcks: "flush"
      case .scheduleAckFlush: "ackTimer"
      case .grant(let bytes): "grant(\(bytes))"
      case .reset(let reason, let cause): "reset(\(TransferMessage.ResetCode(cause)), \(reason))"
      case .closeChannel: "close"
      case .scheduleStallCheck: "stallTimer"
      case .finish(let error): "finish(\(error.map { "\($0)" } ?? "ok"))"
      case .cleanUp: "cleanUp"
      case .log: "log"
      }
    }
  }

  /// An accept in short, as an OFFER_ACCEPT says it: each file's offset (left out: `skip`;
  /// held: 0), then the held files.
  static func acceptance(_ starts: [FileStart]) -> String {
    let offsets = starts.map { start -> String in
      switch start {
      case .skip: return "skip"
      case .from(let offset): return "\(offset)"
      case .held: return "0"
      }
    }
    let held = starts.indices.filter { starts[$0] == .held }
    return "accept([\(offsets.joined(separator: ", "))], held \(held))"
  }

  /// Runs `event` and returns what it asked for, in short.
  static func run(
    _ machine: inout Machine, _ event: (inout Machine, inout [Action]) -> Void
  ) -> [String] {
    var actions: [Action] = []
    event(&machine, &actions)
    return names(actions).filter { $0 != "log" }
  }

  /// A machine that accepted `files` automatically, none of them held or staged before.
  static func accepted(_ files: [TransferFile], openFiles: Int = 1) -> Machine {
    var machine = make(files, openFiles: openFiles)
    var actions: [Action] = []
    machine.start(.automatic(ReceiveOptions(destination: destination)), into: &actions)
    machine.stagingOpened(
      .success((files.indices.map { "n\($0).part" }, [], [])), into: &actions)
    machine.surveyed([:], into: &actions)
    machine.reserved(.success(()), for: .offer, now: now, into: &actions)
    return machine
  }

  @Test("an unsafe path refuses the offer before anyone is asked; nothing is claimed")
  func unsafePath() {
    var machine = Self.make([Self.file("ok"), Self.file("../escape")])
    let actions = Self.run(&machine) { $0.start(.asking, into: &$1) }
    #expect(actions.count == 5)
    #expect(actions[0] == "withdraw")
    #expect(actions[1].hasPrefix("reset(refused, "))
    #expect(actions[2...] == ["close", "cleanUp", actions[4]])
    #expect(actions[4].hasPrefix("refused("))
    #expect(machine.isEnded)
  }

  @Test("asked: a decline is a refusal with its reason (or the default); silence is a decline")
  func declined() {
    for (reason, said) in [("", "declined by the receiver"), ("busy here", "busy here")] {
      var machine = Self.make([Self.file("a")])
      #expect(Self.run(&machine) { $0.start(.asking, into: &$1) } == ["ask"])
      #expect(
        Self.run(&machine) { $0.decided(.decline(reason), into: &$1) }
          == ["reset(refused, \(said))", "close"])
      #expect(machine.isEnded)
    }
    var machine = Self.make([Self.file("a")])
    _ = Self.run(&machine) { $0.start(.asking, into: &$1) }
    #expect(
      Self.run(&machine) { $0.decisionTimedOut(into: &$1) }
        == ["withdraw", "reset(refused, no decision in time)", "close"])
    // A late answer changes nothing.
    #expect(
      Self.run(&machine) {
        $0.decided(.accept(ReceiveOptions(destination: Self.destination)), into: &$1)
      }.isEmpty)
  }

  @Test("a staging name another offer holds is waited for; claimed, or named afresh after the wait")
  func claims() {
    for claimedInTime in [true, false] {
      var machine = Self.make([Self.file("a"), Self.file("b")])
      #expect(
        Self.run(&machine) {
          $0.start(.automatic(ReceiveOptions(destination: Self.destination)), into: &$1)
        } == ["openStaging"])
      #expect(
        Self.run(&machine) {
          $0.stagingOpened(.success((["a.part", "b.part"], [1], [])), into: &$1)
        }
          == ["wait[1]"])
      #expect(machine.waitsForClaim(1) && !machine.waitsForClaim(0))
      if claimedInTime {
        #expect(Self.run(&machine) { $0.claimed(1, into: &$1) } == ["survey[0, 1]"])
        #expect(Self.run(&machine) { $0.claimWaitOver(into: &$1) }.isEmpty)
      } else {
        #expect(Self.run(&machine) { $0.claimWaitOver(into: &$1) } == ["fresh[1]"])
        #expect(
          Self.run(&machine) { $0.namedFresh([1: "b-x.part"], into: &$1) } == ["survey[0, 1]"])
        #expect(machine.slots[1].fresh && machine.slots[1].name == "b-x.part")
        // A fresh name is not looked up for a resume.
      }
      let allClaimed = machine.slots.allSatisfy(\.claimed)
      #expect(allClaimed)
    }
  }

  @Test(
    "the survey decides: held, left out (received before, or the sender's own under skip), resumed")
  func plans() {
    var options = ReceiveOptions(destination: Self.destination, conflictPolicy: .skip)
    options.receivedBefore = ["before"]
    var machine = Self.make([
      Self.file("held", size: 2 << 20), Self.file("own"), Self.file("resumed", size: 300),
      Self.file("before"), Self.file("big", size: 3 << 20),
    ])
    _ = Self.run(&machine) { $0.start(.automatic(options), into: &$1) }
    #expect(
      Self.run(&machine) {
        $0.stagingOpened(.success(((0..<5).map { "n\($0).part" }, [], [])), into: &$1)
      } == ["survey[0, 1, 2, 4]"])
    let held = try! RelativePath(validating: "held")
    var facts: [Int: Machine.FileFacts] = [:]
    facts[0] = Machine.FileFacts(heldCopy: held)
    facts[1] = Machine.FileFacts(placedBySender: true)
    facts[2] = Machine.FileFacts(staged: 100)
    // Needed: the resumed file's 200 and the big one's 3 MiB; the held one's only if sent.
    #expect(
      Self.run(&machine) { $0.surveyed(facts, into: &$1) }
        == ["reserve(\(200 + (3 << 20)), offer)"])
    #expect(
      Self.run(&machine) { $0.reserved(.success(()), for: .offer, now: Self.now, into: &$1) }
        == [
          "meta[4]", "stallTimer", "accepted[1, 3]", "accept([0, skip, 100, skip, 0], held [0])",
          "hash(0)",
        ])
    #expect(machine.isReceiving)
  }

  @Test("no room: refused, its names let go; the sender is told how much is needed")
  func noRoom() {
    var machine = Self.make([Self.file("a", size: 1000)])
    _ = Self.run(&machine) {
      $0.start(.automatic(ReceiveOptions(destination: Self.destination)), into: &$1)
    }
    _ = Self.run(&machine) { $0.stagingOpened(.success((["a.part"], [], [])), into: &$1) }
    _ = Self.run(&machine) { $0.surveyed([:], into: &$1) }
    let actions = Self.run(&machine) {
      $0.reserved(
        .failure(.insufficientSpace(needed: 1000, available: 10)), for: .offer, now: Self.now,
        into: &$1)
    }
    #expect(actions.first == "withdraw")
    #expect(actions.contains { $0.hasPrefix("reset(refused, not enough space") })
    #expect(actions.contains("releaseNames(1)") && actions.contains("cleanUp"))
    #expect(machine.isEnded)
  }

  @Test(
    "a file: opened at its first bytes, written, credit per MiB, settled, placed, acknowledged, the end"
  )
  func oneFile() {
    var machine = Self.accepted([Self.file("a", size: 2 << 20)])
    #expect(
      Self.run(&machine) {
        $0.data(0, count: 1 << 20, hole: false, credit: (1 << 20) + 4, now: Self.now, into: &$1)
      } == ["open(0)"])
    #expect(
      Self.run(&machine) { $0.opened(0, .success(0), into: &$1) } == ["started(0)", "write(0)"])
    #expect(
      Self.run(&machine) { $0.wrote(0, .success(()), into: &$1) }
        == ["release(\(1 << 20))", "grant(\((1 << 20) + 4))"])
    _ = Self.run(&machine) {
      $0.data(0, count: 1 << 20, hole: false, credit: 8, now: Self.now, into: &$1)
    }
    #expect(Self.run(&machine) { $0.wrote(0, .success(()), into: &$1) } == ["release(\(1 << 20))"])
    #expect(
      Self.run(&machine) { $0.fileEnded(0, digest: [1], now: Self.now, into: &$1) }
        == ["land(0)"])
    #expect(
      Self.run(&machine) {
        $0.landed(
          0, .settled(.placed(Self.destination.appending(path: "a")), digest: [1]), into: &$1)
      } == ["done(0)", "ack(0, stored)", "releaseNames(1)", "finish(ok)"])
    #expect(machine.isEnded)
  }

  @Test("an empty file or a wholly staged one is opened at its FILE_END; a corrupt one is removed")
  func endWithoutData() {
    var machine = Self.accepted([Self.file("a", size: 0), Self.file("b")])
    #expect(
      Self.run(&machine) { $0.fileEnded(0, digest: [1], now: Self.now, into: &$1) } == ["open(0)"])
    #expect(
      Self.run(&machine) { $0.opened(0, .success(0), into: &$1) } == ["started(0)", "land(0)"])
    #expect(
      Self.run(&machine) { $0.landed(0, .corrupt, into: &$1) }
        == [
          "remove(n0.part)",
          "failed(0: a: the received data is corrupt (digest mismatch))", "ack(0, corrupt)",
          "ackTimer",
        ])
  }

  @Test(
    "one file at a time on the Ferry wire: data or an end for another file first is a violation")
  func oneAtATime() {
    for second in ["data", "end"] {
      var machine = Self.accepted([Self.file("a"), Self.file("b")])
      _ = Self.run(&machine) {
        $0.data(0, count: 5, hole: false, credit: 9, now: Self.now, into: &$1)
      }
      _ = Self.run(&machine) { $0.opened(0, .success(0), into: &$1) }
      _ = Self.run(&machine) { $0.wrote(0, .success(()), into: &$1) }
      let actions = Self.run(&machine) {
        if second == "data" {
          $0.data(1, count: 5, hole: false, credit: 9, now: Self.now, into: &$1)
        } else {
          $0.fileEnded(1, digest: [1], now: Self.now, into: &$1)
        }
      }
      #expect(actions.contains("discard(0)"), "\(actions)")
      #expect(actions.contains { $0.hasPrefix("reset(failed, cannot write ") }, "\(actions)")
      #expect(actions.last?.hasPrefix("finish(") == true)
      #expect(machine.isEnded)
    }
    // A front end that takes several at once (LocalSend's parallel uploads) may.
    var machine = Self.accepted([Self.file("a"), Self.file("b")], openFiles: 2)
    _ = Self.run(&machine) {
      $0.data(0, count: 5, hole: false, credit: 9, now: Self.now, into: &$1)
    }
    _ = Self.run(&machine) { $0.opened(0, .success(0), into: &$1) }
    _ = Self.run(&machine) { $0.wrote(0, .success(()), into: &$1) }
    #expect(
      Self.run(&machine) { $0.data(1, count: 5, hole: false, credit: 9, now: Self.now, into: &$1) }
        == ["open(1)"])
  }

  @Test(
    "data for a file not offered, finished, or a folder ends the offer; so does data before the answer"
  )
  func unexpectedData() {
    for index in [7, -1] {
      var machine = Self.accepted([Self.file("a")])
      let actions = Self.run(&machine) {
        $0.data(index, count: 1, hole: false, credit: 5, now: Self.now, into: &$1)
      }
      #expect(actions.contains { $0.contains("which is not expected") }, "\(actions)")
      #expect(machine.isEnded)
    }
    var folder = Self.accepted([Self.file("d", size: 0, kind: .folder, permissions: 0o755)])
    #expect(
      Self.run(&folder) { $0.data(0, count: 1, hole: false, credit: 5, now: Self.now, into: &$1) }
        .contains { $0.contains("which is not expected") })
    var early = Self.make([Self.file("a")])
    _ = Self.run(&early) { $0.start(.asking, into: &$1) }
    let actions = Self.run(&early) {
      $0.data(0, count: 1, hole: false, credit: 5, now: Self.now, into: &$1)
    }
    #expect(actions.contains { $0.contains("before the offer was accepted") }, "\(actions)")
    #expect(actions.last == "close")
  }

  @Test("held: identical when both digests match and the copy is still there; else asked for whole")
  func heldFiles() {
    for (same, there) in [(true, true), (true, false), (false, true)] {
      var machine = Self.make([Self.file("h", size: 100)])
      _ = Self.run(&machine) {
        $0.start(.automatic(ReceiveOptions(destination: Self.destination)), into: &$1)
      }
      _ = Self.run(&machine) { $0.stagingOpened(.success((["h.part"], [], [])), into: &$1) }
      _ = Self.run(&machine) {
        $0.surveyed([0: Machine.FileFacts(heldCopy: try! RelativePath(validating: "h"))], into: &$1)
      }
      #expect(
        Self.run(&machine) { $0.reserved(.success(()), for: .offer, now: Self.now, into: &$1) }
          .last == "hash(0)")
      // The sender's digest first: nothing until this side's own.
      #expect(Self.run(&machine) { $0.fileEnded(0, digest: [1], now: Self.now, into: &$1) }.isEmpty)
      let compared = Self.run(&machine) {
        $0.heldHashed(0, same ? [1] : [2], now: Self.now, into: &$1)
      }
      if !same {
        #expect(compared == ["ack(0, differs)", "ackTimer", "flush"])
      } else {
        #expect(compared == ["checkCopy(0)"])
        let checked = Self.run(&machine) { $0.heldCopyChecked(0, stillThere: there, into: &$1) }
        if there {
          #expect(
            checked == [
              "remove(h.part)", "done(0,identical)", "ack(0, identical)", "releaseNames(1)",
              "finish(ok)",
            ])
          continue
        }
        #expect(checked == ["ack(0, differs)", "ackTimer", "flush"])
      }
      // Sent whole: its space is reserved first, and it is received from 0.
      #expect(
        Self.run(&machine) {
          $0.data(0, count: 100, hole: false, credit: 104, now: Self.now, into: &$1)
        } == ["reserve(100, whole(0))"])
      #expect(
        Self.run(&machine) { $0.reserved(.success(()), for: .whole(0), now: Self.now, into: &$1) }
          == ["open(0)"])
    }
  }

  @Test(
    "held: a comparison the front end stops waiting for is asked for whole (once); a settled one is left; only holdable files are held"
  )
  func stopComparing() {
    var machine = Self.make(
      [Self.file("h", size: 100), Self.file("g", size: 100)], holdable: [0])
    _ = Self.run(&machine) {
      $0.start(.automatic(ReceiveOptions(destination: Self.destination)), into: &$1)
    }
    var actions: [Action] = []
    machine.stagingOpened(.success((["h.part", "g.part"], [], [])), into: &actions)
    // File 1 has no digest to compare: it is not asked about as a held file.
    let held = actions.compactMap { action -> [Bool]? in
      guard case .survey(let questions) = action else { return nil }
      return questions.map(\.held)
    }
    #expect(held == [[true, false]], "\(Self.names(actions))")
    _ = Self.run(&machine) {
      $0.surveyed([0: Machine.FileFacts(heldCopy: try! RelativePath(validating: "h"))], into: &$1)
    }
    #expect(
      Self.run(&machine) { $0.reserved(.success(()), for: .offer, now: Self.now, into: &$1) }
        .last == "hash(0)")
    _ = Self.run(&machine) { $0.fileEnded(0, digest: [1], now: Self.now, into: &$1) }
    // While this side hashes, the sender's silence is not counted.
    #expect(
      Self.run(&machine) { $0.stallCheck(now: Self.now + .seconds(90), into: &$1) }
        == ["stallTimer"])
    // The hash takes too long: it is left and the file asked for whole, once.
    let stopped = Self.now + .seconds(100)
    #expect(
      Self.run(&machine) { $0.stopComparing([0], now: stopped, into: &$1) }
        == ["stopHash(0)", "ack(0, differs)", "ackTimer", "flush"])
    #expect(Self.run(&machine) { $0.stopComparing([0], now: stopped, into: &$1) }.isEmpty)
    // The left hash no longer stops the clock: silence counts from the stop.
    #expect(
      Self.run(&machine) { $0.stallCheck(now: stopped + .seconds(59), into: &$1) }
        == ["stallTimer"])
    // Its result, come after all, changes nothing and restarts no clock; the file comes whole.
    #expect(
      Self.run(&machine) { $0.heldHashed(0, [1], now: stopped + .seconds(30), into: &$1) }
        .isEmpty)
    var silent = machine
    let ended = Self.run(&silent) { $0.stallCheck(now: stopped + .seconds(60), into: &$1) }
    #expect(ended.contains { $0.hasPrefix("reset(failed, ") }, "\(ended)")
    #expect(
      Self.run(&machine) {
        $0.data(0, count: 100, hole: false, credit: 104, now: stopped, into: &$1)
      } == ["reserve(100, whole(0))"])
  }

  @Test("held: comparisons stopped together start no further hash; each is asked for whole")
  func stopComparingTogether() {
    let files = (0..<3).map { Self.file("h\($0)", size: 100) }
    var machine = Self.make(files, holdable: [0, 1, 2])
    _ = Self.run(&machine) {
      $0.start(.automatic(ReceiveOptions(destination: Self.destination)), into: &$1)
    }
    _ = Self.run(&machine) {
      $0.stagingOpened(.success((["a.part", "b.part", "c.part"], [], [])), into: &$1)
    }
    _ = Self.run(&machine) {
      $0.surveyed(
        Dictionary(
          uniqueKeysWithValues: (0..<3).map {
            ($0, Machine.FileFacts(heldCopy: try! RelativePath(validating: "h\($0)")))
          }), into: &$1)
    }
    let started = Self.run(&machine) {
      $0.reserved(.success(()), for: .offer, now: Self.now, into: &$1)
    }
    let hashed = started.filter { $0.hasPrefix("hash(") }
    #expect(hashed.count == 1, "\(started)")
    let stopped = Self.run(&machine) {
      $0.stopComparing([0, 1, 2], now: Self.now, into: &$1)
    }
    #expect(!stopped.contains { $0.hasPrefix("hash(") }, "\(stopped)")
    // The one hash under way is left; the others never started.
    #expect(stopped.filter { $0.hasPrefix("stopHash(") } == hashed.map { "stopH" + $0.dropFirst() })
    #expect(stopped.filter { $0.hasSuffix(", differs)") }.count == 3, "\(stopped)")
  }

  @Test("held: data (or a second FILE_END) after its digest and before the answer ends the offer")
  func heldBeforeAnswer() {
    for second in ["data", "end"] {
      var machine = Self.make([Self.file("h", size: 100)])
      _ = Self.run(&machine) {
        $0.start(.automatic(ReceiveOptions(destination: Self.destination)), into: &$1)
      }
      _ = Self.run(&machine) { $0.stagingOpened(.success((["h.part"], [], [])), into: &$1) }
      _ = Self.run(&machine) {
        $0.surveyed([0: Machine.FileFacts(heldCopy: try! RelativePath(validating: "h"))], into: &$1)
      }
      _ = Self.run(&machine) { $0.reserved(.success(()), for: .offer, now: Self.now, into: &$1) }
      _ = Self.run(&machine) { $0.fileEnded(0, digest: [1], now: Self.now, into: &$1) }
      let actions = Self.run(&machine) {
        if second == "data" {
          $0.data(0, count: 1, hole: false, credit: 5, now: Self.now, into: &$1)
        } else {
          $0.fileEnded(0, digest: [1], now: Self.now, into: &$1)
        }
      }
      #expect(actions.contains { $0.contains("before its digest was compared") }, "\(actions)")
      #expect(machine.isEnded)
    }
  }

  @Test("a streamed file: room reserved ahead as it grows, no HOLE, deleted when cut short")
  func streamed() {
    let stream = Self.file("in", size: 0, kind: .stream, permissions: 0o600)
    var machine = Self.accepted([stream])
    _ = Self.run(&machine) {
      $0.data(0, count: 100, hole: false, credit: 104, now: Self.now, into: &$1)
    }
    #expect(
      Self.run(&machine) { $0.opened(0, .success(0), into: &$1) }
        == ["started(0)", "reserve(\(Machine.streamStep), stream(0))"])
    #expect(
      Self.run(&machine) { $0.reserved(.success(()), for: .stream(0), now: Self.now, into: &$1) }
        == ["write(0)"])
    #expect(Self.run(&machine) { $0.wrote(0, .success(()), into: &$1) } == ["release(100)"])
    let hole = Self.run(&machine) {
      $0.data(0, count: 1 << 20, hole: true, credit: 12, now: Self.now, into: &$1)
    }
    #expect(hole.contains { $0.contains("a HOLE in streamed file 0") }, "\(hole)")
    #expect(hole.contains("discard(0)") && hole.contains("remove(n0.part)"), "\(hole)")

    var full = Self.accepted([stream])
    _ = Self.run(&full) {
      $0.data(0, count: 100, hole: false, credit: 104, now: Self.now, into: &$1)
    }
    _ = Self.run(&full) { $0.opened(0, .success(0), into: &$1) }
    let refused = Self.run(&full) {
      $0.reserved(
        .failure(.insufficientSpace(needed: 1, available: 0)), for: .stream(0), now: Self.now,
        into: &$1)
    }
    #expect(refused.contains { $0.hasPrefix("reset(failed, not enough space") }, "\(refused)")
    #expect(full.isEnded)
  }

  @Test(
    "a trickle is silence: a byte every 20 s ends the offer at the stall limit; 64 KiB in it is progress"
  )
  func trickle() {
    var machine = Self.accepted([Self.file("a", size: 1 << 20)])
    for second in stride(from: 20, through: 40, by: 20) {
      _ = Self.run(&machine) {
        $0.data(
          0, count: 1, hole: false, credit: 1, now: Self.now + .seconds(second), into: &$1)
      }
    }
    let ended = Self.run(&machine) { $0.stallCheck(now: Self.now + .seconds(60), into: &$1) }
    #expect(ended.contains("failed(0: \(TransferError.stalled(.seconds(60))))"), "\(ended)")

    var moving = Self.accepted([Self.file("a", size: 1 << 20)])
    _ = Self.run(&moving) {
      $0.data(
        0, count: 64 << 10, hole: false, credit: 64 << 10, now: Self.now + .seconds(30),
        into: &$1)
    }
    #expect(
      Self.run(&moving) { $0.stallCheck(now: Self.now + .seconds(60), into: &$1) }
        == ["stallTimer"])
    #expect(!moving.isEnded)
  }

  @Test(
    "the sender's silence for the whole stall limit ends the offer; hashing a held file stops the clock"
  )
  func stall() {
    var machine = Self.accepted([Self.file("a")])
    #expect(
      Self.run(&machine) { $0.stallCheck(now: Self.now + .seconds(59), into: &$1) }
        == ["stallTimer"])
    let ended = Self.run(&machine) { $0.stallCheck(now: Self.now + .seconds(60), into: &$1) }
    #expect(ended.contains { $0.hasPrefix("reset(failed, ") }, "\(ended)")
    #expect(ended.contains("failed(0: \(TransferError.stalled(.seconds(60))))"), "\(ended)")
    #expect(machine.isEnded)
  }

  @Test(
    "the sender's reset, the link's end, the application's cancel: every file fails, the sender is not told"
  )
  func endings() {
    let events: [(String, (inout Machine, inout [Action]) -> Void)] = [
      ("reset", { $0.senderReset(reason: "bye", into: &$1) }),
      ("link", { $0.linkClosed(reason: "gone", into: &$1) }),
      ("cancel", { $0.cancelled(into: &$1) }),
    ]
    for (name, event) in events {
      var machine = Self.accepted([Self.file("a"), Self.file("b")])
      let actions = Self.run(&machine, event)
      #expect(!actions.contains { $0.hasPrefix("reset(") }, "\(name): \(actions)")
      #expect(actions.filter { $0.hasPrefix("failed(") }.count == 2, "\(name): \(actions)")
      #expect(actions.last?.hasPrefix("finish(") == true, "\(name): \(actions)")
      // After the end, nothing.
      #expect(
        Self.run(&machine) { $0.fileEnded(0, digest: [1], now: Self.now, into: &$1) }.isEmpty)
    }
    // Before the answer: the question is withdrawn and the channel closed.
    var asked = Self.make([Self.file("a")])
    _ = Self.run(&asked) { $0.start(.asking, into: &$1) }
    #expect(
      Self.run(&asked) { $0.senderReset(reason: "bye", into: &$1) } == ["withdraw", "close"])
  }

  @Test(
    "an empty folder: created at its FILE_END with the digest of nothing; another digest is corrupt"
  )
  func folders() {
    let folder = Self.file("d", size: 0, kind: .folder, permissions: 0o755)
    var machine = Self.accepted([folder, folder.renamed("e")])
    #expect(
      Self.run(&machine) {
        $0.fileEnded(0, digest: ContentHasher(.xxh3).finalize(), now: Self.now, into: &$1)
      } == ["makeFolder(0)"])
    #expect(
      Self.run(&machine) {
        $0.landed(0, .settled(.placed(Self.destination), digest: nil), into: &$1)
      }
        == ["done(0)", "ack(0, stored)", "ackTimer"])
    let corrupt = Self.run(&machine) { $0.fileEnded(1, digest: [9], now: Self.now, into: &$1) }
    #expect(corrupt.first?.hasPrefix("failed(1:") == true, "\(corrupt)")
  }

  @Test("FILE_ACKs are gathered: a timer after the first, a flush at 256, all with the end")
  func ackBatching() {
    let files = (0..<300).map { Self.file("f\($0)", size: 0) }
    var machine = Self.accepted(files)
    var flushes = 0
    var timers = 0
    for index in 0..<300 {
      _ = Self.run(&machine) { $0.fileEnded(index, digest: [1], now: Self.now, into: &$1) }
      _ = Self.run(&machine) { $0.opened(index, .success(0), into: &$1) }
      let actions = Self.run(&machine) {
        $0.landed(index, .settled(.placed(Self.destination), digest: [1]), into: &$1)
      }
      flushes += actions.count { $0 == "flush" }
      timers += actions.count { $0 == "ackTimer" }
      if index == 299 { #expect(actions.last == "finish(ok)") }
    }
    #expect(flushes == 1 && timers == 2)
  }

  /// Takes file `index` (10 bytes) of an accepted offer from its first bytes to its end.
  static func receiveWhole(_ machine: inout Machine, _ index: Int) -> [String] {
    var said = run(&machine) {
      $0.data(index, count: 10, hole: false, credit: 14, now: now, into: &$1)
    }
    said += run(&machine) { $0.opened(index, .success(0), into: &$1) }
    said += run(&machine) { $0.wrote(index, .success(()), into: &$1) }
    said += run(&machine) { $0.fileEnded(index, digest: [1], now: now, into: &$1) }
    return said
  }

  @Test(
    "files land beside the offer and are concluded as they land, in any order; the next file's bytes come meanwhile"
  )
  func landingOutOfOrder() {
    var machine = Self.accepted([Self.file("a"), Self.file("b")])
    #expect(Self.receiveWhole(&machine, 0).last == "land(0)")
    // File 0 still lands: file 1 is not "before file 0 ended".
    let second = Self.receiveWhole(&machine, 1)
    #expect(second.first == "open(1)" && second.last == "land(1)", "\(second)")
    #expect(
      Self.run(&machine) {
        $0.landed(1, .settled(.placed(Self.destination), digest: [1]), into: &$1)
      }
        == ["done(1)", "ack(1, stored)", "ackTimer"])
    #expect(
      Self.run(&machine) {
        $0.landed(0, .settled(.skipped(ownedBySender: false), digest: [1]), into: &$1)
      }
        == ["done(0)", "ack(0, stored)", "releaseNames(2)", "finish(ok)"])
    // A second word for a file that landed: nothing.
    #expect(
      Self.run(&machine) { $0.landed(0, .corrupt, into: &$1) }.isEmpty)
  }

  @Test(
    "nothing more may come for a landing file: its bytes are a violation, a second end is ignored")
  func landingIsFinal() {
    var machine = Self.accepted([Self.file("a"), Self.file("b")])
    _ = Self.receiveWhole(&machine, 0)
    #expect(
      Self.run(&machine) { $0.fileEnded(0, digest: [1], now: Self.now, into: &$1) }.isEmpty)
    let again = Self.run(&machine) {
      $0.data(0, count: 1, hole: false, credit: 5, now: Self.now, into: &$1)
    }
    #expect(
      again.contains { $0.hasPrefix("reset(failed, cannot write data for file 0, which is not") },
      "\(again)")
    // The violation stops the offer, but file 0 was complete: it still lands, and is reported.
    #expect(
      !again.contains { $0.hasPrefix("finish(") || $0.hasPrefix("failed(0") }, "\(again)")
    #expect(again.contains { $0.hasPrefix("failed(1:") }, "\(again)")
    let landed = Self.run(&machine) {
      $0.landed(0, .settled(.placed(Self.destination), digest: [1]), into: &$1)
    }
    #expect(landed.first == "done(0)" && landed.last?.hasPrefix("finish(") == true, "\(landed)")
    #expect(machine.isEnded)
  }

  @Test(
    "stopped while files land: the sender is told at once, the rest fail, each landing file is reported as it lands, the offer ends after the last"
  )
  func stopWhileLanding() {
    var machine = Self.accepted([Self.file("a"), Self.file("b"), Self.file("c")], openFiles: 3)
    _ = Self.receiveWhole(&machine, 0)
    _ = Self.receiveWhole(&machine, 1)
    let stopped = Self.run(&machine) { $0.cancelled(into: &$1) }
    #expect(stopped.filter { $0.hasPrefix("failed(") } == ["failed(2: \(TransferError.cancelled))"])
    #expect(!stopped.contains { $0.hasPrefix("finish(") }, "\(stopped)")
    // Only file 2's name goes back now: files 0 and 1 are still being moved from theirs.
    #expect(stopped.contains("releaseNames(1)"), "\(stopped)")
    // Stopped is stopped: a second ending, more bytes, a timer change nothing.
    #expect(Self.run(&machine) { $0.linkClosed(reason: "gone", into: &$1) }.isEmpty)
    #expect(
      Self.run(&machine) {
        $0.data(2, count: 1, hole: false, credit: 5, now: Self.now, into: &$1)
      }.isEmpty)
    #expect(Self.run(&machine) { $0.stallCheck(now: Self.now + .seconds(999), into: &$1) }.isEmpty)
    #expect(
      Self.run(&machine) { $0.landed(1, .corrupt, into: &$1) }
        == ["remove(n1.part)", "failed(1: b: the received data is corrupt (digest mismatch))"])
    #expect(!machine.isEnded)
    #expect(
      Self.run(&machine) {
        $0.landed(0, .settled(.placed(Self.destination), digest: [1]), into: &$1)
      }
        == ["done(0)", "releaseNames(2)", "finish(\(TransferError.cancelled))"])
    #expect(machine.isEnded)
  }
}

extension TransferFile {
  /// The same entry under another path.
  fileprivate func renamed(_ path: String) -> TransferFile {
    var copy = self
    copy.path = path
    return copy
  }
}
