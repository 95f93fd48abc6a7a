import Testing

@testable import FerryCLI

/// `forget <TAB>` and `trust <TAB>`: fingerprints, with the peer's name where the shell can
/// show one.
@Suite("Fingerprint completion")
struct PeerCompletionTests {
  static let fingerprint = String(repeating: "0123456789ABCDEF", count: 4)

  @Test("zsh and fish show the name beside the fingerprint; bash gets the bare fingerprint")
  func described() {
    let fpr = Self.fingerprint
    #expect(
      PeerCompletion.described(fpr, name: "Office box", trusted: true, shell: "zsh")
        == "\(fpr):Office box (trusted)")
    #expect(
      PeerCompletion.described(fpr, name: "laptop", trusted: false, shell: "fish")
        == "\(fpr)\tlaptop")
    #expect(PeerCompletion.described(fpr, name: "laptop", trusted: false, shell: "bash") == fpr)
    #expect(PeerCompletion.described(fpr, name: "laptop", trusted: false, shell: nil) == fpr)
  }

  @Test("a name's escape sequences, tabs and newlines never reach the shell")
  func hostileName() {
    let shown = PeerCompletion.described(
      Self.fingerprint, name: "a\u{1B}[31m\tb\nc\u{202E}", trusted: false, shell: "fish")
    #expect(shown == "\(Self.fingerprint)\ta[31mbc", "\(shown.debugDescription)")
    #expect(
      PeerCompletion.described(Self.fingerprint, name: "\u{1B}", trusted: false, shell: "zsh")
        == "\(Self.fingerprint):(no name)")
  }
}
