/// The receiver's verdict on one offered file, for its sender (the Ferry wire says it in a
/// FILE_ACK; LocalSend in an HTTP status). A value: used on any thread.
package enum FileVerdict: Hashable, Sendable {
  /// Stored and verified.
  case stored
  /// The digest did not match; nothing was kept.
  case corrupt
  /// It could not be written (the reason says why); nothing was kept.
  case failed
  /// Left out (the name was taken and the policy is skip).
  case skipped
  /// Already there with the same content (a held file whose digest matched): nothing written.
  case identical
  /// A held file whose digest did not match: not stored yet, and not an end — the sender is
  /// asked for it whole.
  case differs
}
