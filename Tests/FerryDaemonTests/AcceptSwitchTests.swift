import Ferry
import FerryAgent
import Testing

@testable import FerryDaemon

/// The daemon's switch: the configured policy first, then what the API sets; configured keys
/// kept; letting everyone in never set through it.
@Suite("The daemon's accept switch")
struct AcceptSwitchTests {
  static let key = ReceivePolicy.AcceptedKey(
    .fingerprint(try! Fingerprint(parsing: String(repeating: "AB", count: 32))), full: true)

  @Test("each mode is the policy it says, and the configured keys stay accepted")
  func modes() {
    let switcher = AcceptSwitch(
      .senders([Self.key], trusted: false, askOthers: false), asker: ReceivePolicy.ask)
    #expect(switcher.mode == .ask)
    #expect(switcher.set(.trustedOnly))
    #expect(switcher.current == .senders([Self.key], trusted: true, askOthers: false))
    #expect(switcher.mode == .trustedOnly)
    #expect(switcher.set(.trusted))
    #expect(switcher.current == .senders([Self.key], trusted: true, askOthers: true))
    #expect(switcher.set(.ask))
    #expect(switcher.current == .senders([Self.key], trusted: false, askOthers: true))
  }

  @Test("without keys, ask is the plain ask; yes is refused and changes nothing")
  func plain() {
    let switcher = AcceptSwitch(.ask, asker: ReceivePolicy.ask)
    #expect(switcher.set(.trustedOnly))
    #expect(!switcher.set(.yes))
    #expect(switcher.mode == .trustedOnly)
    #expect(switcher.set(.ask))
    #expect(switcher.current == .ask)
    #expect(AcceptSwitch(.everyone, asker: ReceivePolicy.ask).mode == .yes)
  }

  @Test("trusted only declines a new key unasked; trusted asks about it")
  func answers() {
    let switcher = AcceptSwitch(.ask, asker: ReceivePolicy.ask)
    let stranger = try! Fingerprint(parsing: String(repeating: "CD", count: 32))
    switcher.set(.trustedOnly)
    #expect(switcher.current.decision(for: stranger, status: .new)?.accept == false)
    #expect(switcher.current.decision(for: stranger, status: .known(trusted: true))?.accept == true)
    switcher.set(.trusted)
    #expect(switcher.current.decision(for: stranger, status: .new) == nil)
  }
}
