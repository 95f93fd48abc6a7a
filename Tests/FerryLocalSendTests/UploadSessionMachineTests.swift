import Ferry
import Testing

@testable import FerryLocalSend

/// The LocalSend receiver's sessions as a pure value: who may start one, upload into it, and
/// how many PIN guesses anyone gets.
@Suite("LocalSend upload sessions")
struct UploadSessionMachineTests {
  func upload(_ index: Int, token: String = "t") -> UploadSessionMachine.Upload {
    UploadSessionMachine.Upload(index: index, token: token, size: 10, digest: nil)
  }

  @Test("one session at a time: a second prepare-upload is busy until the first ends")
  func oneAtATime() {
    let machine = Machine(pin: nil)
    #expect(machine.prepare(from: "10.0.0.2", pin: nil, id: "s1") == .start(id: "s1"))
    #expect(machine.prepare(from: "10.0.0.3", pin: nil, id: "s2") == .busy)
    #expect(machine.prepare(from: "10.0.0.2", pin: nil, id: "s3") == .busy)
    machine.ended("s1")
    #expect(machine.prepare(from: "10.0.0.3", pin: nil, id: "s2") == .start(id: "s2"))
  }

  @Test(
    "another certificate at the same address (behind the same router) can neither cancel nor upload into a session"
  )
  func boundToItsCertificate() throws {
    let owner = try Fingerprint(bytes: [UInt8](repeating: 1, count: 32))
    let neighbour = try Fingerprint(bytes: [UInt8](repeating: 2, count: 32))
    let machine = Machine(pin: nil)
    _ = machine.prepare(from: "10.0.0.2", pin: nil, id: "s1", owner: owner)
    // Asked about: only its sender may take it back.
    #expect(machine.mayCancel(nil, from: "10.0.0.2", certificate: neighbour) == nil)
    #expect(machine.mayCancel("s1", from: "10.0.0.2", certificate: nil) == nil)
    #expect(machine.mayCancel("s1", from: "10.0.0.2", certificate: owner) == "s1")
    #expect(machine.accepted("s1", uploads: ["a": upload(0, token: "ta")]))
    #expect(machine.mayCancel("s1", from: "10.0.0.2", certificate: neighbour) == nil)
    #expect(
      machine.admit("a", token: "ta", session: "s1", from: "10.0.0.2", certificate: neighbour)
        == .forbidden)
    guard
      case .upload = machine.admit(
        "a", token: "ta", session: "s1", from: "10.0.0.2", certificate: owner)
    else {
      Issue.record("the owner's upload was not admitted")
      return
    }
    #expect(machine.mayCancel(nil, from: "10.0.0.2", certificate: owner) == "s1")
  }

  @Test("uploads only from the address that prepared, with the file's token, each file once")
  func uploadsAreBound() {
    let machine = Machine(pin: nil)
    _ = machine.prepare(from: "10.0.0.2", pin: nil, id: "s1")
    #expect(machine.accepted("s1", uploads: ["a": upload(0, token: "ta")]))
    #expect(machine.admit("a", token: "ta", session: "s1", from: "10.0.0.9") == .forbidden)
    #expect(machine.admit("a", token: "tb", session: "s1", from: "10.0.0.2") == .forbidden)
    #expect(machine.admit("b", token: "ta", session: "s1", from: "10.0.0.2") == .forbidden)
    #expect(machine.admit("a", token: "ta", session: "s0", from: "10.0.0.2") == .unknownSession)
    guard case .upload(let first) = machine.admit("a", token: "ta", session: "s1", from: "10.0.0.2")
    else {
      Issue.record("the right upload was not admitted")
      return
    }
    #expect(first.index == 0)
    // Twice at once, and again after it ended: one yes writes the file once.
    #expect(machine.admit("a", token: "ta", session: "s1", from: "10.0.0.2") == .alreadyUploaded)
    machine.uploadEnded("a", session: "s1", retry: false)
    #expect(machine.admit("a", token: "ta", session: "s1", from: "10.0.0.2") == .alreadyUploaded)
  }

  @Test("no more uploads at once than the core has files open: the ninth waits (429)")
  func parallelCap() {
    let machine = Machine(pin: nil)
    _ = machine.prepare(from: "a", pin: nil, id: "s")
    var uploads: [String: UploadSessionMachine.Upload] = [:]
    for index in 0..<10 { uploads["f\(index)"] = upload(index, token: "t\(index)") }
    #expect(machine.accepted("s", uploads: uploads))
    for index in 0..<8 {
      guard case .upload = machine.admit("f\(index)", token: "t\(index)", session: "s", from: "a")
      else {
        Issue.record("upload \(index) was not admitted")
        return
      }
    }
    #expect(machine.admit("f8", token: "t8", session: "s", from: "a") == .tooMany)
    machine.uploadEnded("f0", session: "s", retry: false)
    guard case .upload = machine.admit("f8", token: "t8", session: "s", from: "a") else {
      Issue.record("the ninth was not admitted once one ended")
      return
    }
    // An end said twice, or of a file never admitted, or of another session, frees nothing.
    machine.uploadEnded("f0", session: "s", retry: false)
    machine.uploadEnded("f9", session: "s", retry: false)
    machine.uploadEnded("f1", session: "other", retry: false)
    #expect(machine.admit("f9", token: "t9", session: "s", from: "a") == .tooMany)
    // A retried file waits again and frees its place; it may then be uploaded again.
    machine.uploadEnded("f1", session: "s", retry: true)
    guard case .upload = machine.admit("f1", token: "t1", session: "s", from: "a") else {
      Issue.record("a retried file was not admitted again")
      return
    }
    #expect(machine.admit("f9", token: "t9", session: "s", from: "a") == .tooMany)
  }

  @Test("a missing PIN is asked for; 3 wrong ones from an address are 429 there, not elsewhere")
  func pinPerAddress() {
    let machine = Machine(pin: "4711")
    #expect(machine.prepare(from: "a", pin: nil, id: "1") == .pinRequired)
    #expect(machine.prepare(from: "a", pin: nil, id: "1") == .pinRequired)
    for guess in ["1", "2", "3"] {
      #expect(machine.prepare(from: "a", pin: guess, id: "1") == .pinRequired)
    }
    #expect(machine.prepare(from: "a", pin: "4711", id: "1") == .tooManyAttempts)
    #expect(machine.prepare(from: "b", pin: "4711", id: "2") == .start(id: "2"))
  }

  @Test(
    "many addresses together get 30 wrong PINs in 10 minutes, then everyone gets 429 until the window ends"
  )
  func pinOverall() {
    let machine = Machine(pin: "4711")
    let start = ContinuousClock.now
    for address in 0..<15 {
      for guess in ["1", "2"] {
        #expect(
          machine.prepare(from: "fd00::\(address)", pin: guess, id: "x", now: start)
            == .pinRequired)
      }
    }
    #expect(
      machine.prepare(from: "fd00::99", pin: "4711", id: "y", now: start + .seconds(599))
        == .tooManyAttempts)
    #expect(machine.check(from: "fd00::99", pin: "4711", now: start) == .tooManyAttempts)
    #expect(
      machine.prepare(from: "fd00::99", pin: "4711", id: "y", now: start + .seconds(601))
        == .start(id: "y"))
  }

  @Test("only the sender that prepared a session may cancel it")
  func cancel() {
    let machine = Machine(pin: nil)
    _ = machine.prepare(from: "10.0.0.2", pin: nil, id: "s1")
    #expect(machine.mayCancel(nil, from: "10.0.0.3") == nil)
    #expect(machine.mayCancel("s1", from: "10.0.0.3") == nil)
    #expect(machine.mayCancel("s2", from: "10.0.0.2") == nil)
    #expect(machine.mayCancel(nil, from: "10.0.0.2") == "s1")
  }
}

/// The machine in a reference, so that an expectation may call its mutating methods.
private final class Machine {
  var value: UploadSessionMachine

  init(pin: String?) { value = UploadSessionMachine(pin: pin) }

  func prepare(
    from address: String, pin: String?, id: String, owner: Fingerprint? = nil,
    now: ContinuousClock.Instant = .now
  ) -> UploadSessionMachine.Preparation {
    value.prepare(from: address, pin: pin, id: id, owner: owner, now: now)
  }

  func check(from address: String, pin: String?, now: ContinuousClock.Instant)
    -> UploadSessionMachine.Preparation
  {
    value.check(from: address, pin: pin, now: now)
  }

  func accepted(_ id: String, uploads: [String: UploadSessionMachine.Upload]) -> Bool {
    value.accepted(id, uploads: uploads)
  }

  func admit(
    _ fileId: String, token: String, session: String, from address: String,
    certificate: Fingerprint? = nil
  ) -> UploadSessionMachine.Admission {
    value.admit(fileId, token: token, session: session, from: address, certificate: certificate)
  }

  func uploadEnded(_ fileId: String, session: String, retry: Bool) {
    value.uploadEnded(fileId, session: session, retry: retry)
  }

  func mayCancel(_ session: String?, from address: String, certificate: Fingerprint? = nil)
    -> String?
  {
    value.mayCancel(session, from: address, certificate: certificate)
  }

  func ended(_ id: String) { value.ended(id) }
}
