import Foundation

// `Data` forms of the byte-array calls, for code coming from MultipeerConnectivity (which speaks
// `Data` throughout). Each copies the bytes once and behaves exactly as its `[UInt8]` form.

extension Session {
  /// ``send(_:to:mode:)`` for `Data`.
  ///
  /// - Returns: The peers an unreliable message was dropped for (always empty when reliable).
  /// - Throws: As ``send(_:to:mode:)``.
  @discardableResult
  public func send(_ data: Data, to peers: [PeerID], mode: SendMode = .reliable)
    async throws(TransferError) -> [PeerID]
  {
    try await send([UInt8](data), to: peers, mode: mode)
  }
}

extension ReceivedMessage {
  /// The bytes as `Data`.
  public var bytes: Data { Data(data) }
}

extension StreamWriter {
  /// ``write(_:)`` for `Data`.
  ///
  /// - Throws: As ``write(_:)``.
  public func write(_ data: Data) async throws(TransferError) {
    try await write([UInt8](data))
  }
}

extension Browser {
  /// ``invite(_:to:context:timeout:onVerificationCode:)`` with a `Data` context.
  ///
  /// - Throws: As ``invite(_:to:context:timeout:onVerificationCode:)``.
  public func invite(
    _ peer: DiscoveredPeer, to session: Session, context: Data,
    timeout: Duration = .seconds(30),
    onVerificationCode: (@Sendable (PeerID, VerificationCode) -> Void)? = nil
  ) async throws(InvitationError) -> PeerID {
    try await invite(
      peer, to: session, context: [UInt8](context), timeout: timeout,
      onVerificationCode: onVerificationCode)
  }
}

extension Invitation {
  /// ``context`` as `Data`.
  public var contextData: Data { Data(context) }
}
