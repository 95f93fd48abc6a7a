import FerryAgent

extension CLIFailure {
  /// A send's failure as the command ends with it: its exit status and the stable code of its
  /// `error` event.
  init(_ failure: SendFailure) {
    let (status, code): (ExitStatus, ErrorCode)
    switch failure.kind {
    case .noPeer: (status, code) = (.noPeer, .noPeer)
    case .usage: (status, code) = (.usage, .usage)
    case .cannotRead: (status, code) = (.usage, .cannotRead)
    case .invalidPath: (status, code) = (.usage, .invalidPath)
    case .nothingToSend: (status, code) = (.usage, .empty)
    case .batchChanged: (status, code) = (.transferFailed, .cannotRead)
    case .declined: (status, code) = (.declined, .declined)
    case .authentication: (status, code) = (.authentication, .authentication)
    case .keyChanged: (status, code) = (.authentication, .keyChanged)
    case .invitationFailed: (status, code) = (.transferFailed, .invitationFailed)
    case .transferFailed: (status, code) = (.transferFailed, .transferFailed)
    case .cancelled: (status, code) = (.transferFailed, .cancelled)
    case .interrupted: (status, code) = (.interrupted, .interrupted)
    case .unreadable: (status, code) = (.partial, .unreadable)
    case .busy: (status, code) = (.transferFailed, .busy)
    case .pin: (status, code) = (.authentication, .pin)
    case .integrity: (status, code) = (.transferFailed, .integrity)
    }
    self.init(status: status, message: failure.message, code: code)
  }
}
