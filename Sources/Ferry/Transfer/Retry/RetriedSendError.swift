/// Why a retrying send gave up: the last attempt's failure, to connect or to transfer.
public enum RetriedSendError: Error, Hashable, Sendable, CustomStringConvertible {
  /// Reconnecting failed (a decline, an authentication failure, or no answer for as long as
  /// the policy allows).
  case invitation(InvitationError)
  /// The transfer failed (a cancel, a refusal, a file error, or a dropped link for as long as
  /// the policy allows).
  case transfer(TransferError)

  /// The failure's own description.
  public var description: String {
    switch self {
    case .invitation(let error): error.description
    case .transfer(let error): error.description
    }
  }
}
