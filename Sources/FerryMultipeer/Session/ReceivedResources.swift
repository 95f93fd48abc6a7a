import Ferry
import Foundation

/// Resources a session receives: the private folder they are staged in and the delegate calls
/// for them. (An offer Ferry refuses, one too big for the disk, reaches only the sender, whose
/// completion handler gets the error.)
///
/// Ferry accepts every resource into the folder without relocating it (``ReceiveOptions``
/// `relocate: false`), so a verified file stays at its temporary URL in `.ferry-partial`. The
/// delegate gets that URL and moves the file; whatever it leaves there is deleted once it
/// returns, as MultipeerConnectivity does.
enum ReceivedResources {
  /// Makes the session's folder: a new directory of mode 0700 in the temporary directory.
  static func makeFolder() -> URL {
    let base = FileManager.default.temporaryDirectory.path
    var template = Array("\(base)/ferry-multipeer.XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    guard let made else {
      preconditionFailure("MCSession: cannot make a temporary folder in \(base): errno \(errno)")
    }
    return URL(fileURLWithPath: String(cString: made), isDirectory: true)
  }

  /// Removes the session's folder and everything left in it.
  static func removeFolder(_ folder: URL) {
    try? FileManager.default.removeItem(at: folder)
  }

  /// Accepts `offer` once the delegate has heard its peer `connected` (a resource sent right
  /// after connecting may arrive while the certificate question is still open); declines it
  /// when the peer leaves or is turned away first, or after the offer's decision time.
  static func decide(_ offer: ResourceOffer, for session: MCSession, options: ReceiveOptions)
    async
  {
    let deadline = ContinuousClock.now + ResourceOffer.decisionTimeout - .seconds(1)
    while offer.isPending {
      if session.isConnected(offer.peer) {
        offer.accept(options)
        return
      }
      guard session.ferrySession.isConnected(offer.peer), ContinuousClock.now < deadline else {
        break
      }
      try? await Task.sleep(for: .milliseconds(20))
    }
    offer.decline(reason: "not connected")
  }

  /// Tells the delegate about one of Ferry's resource events, through the gate; `handled`
  /// is called once the delegate has had it (or at once, for events it does not hear of).
  static func forward(
    _ event: ResourceEvent, to session: MCSession, handled: @escaping @Sendable () -> Void
  ) {
    switch event {
    case .started(let name, let peer, let progress):
      let resourceName = ResourceName.unescape(name)
      let pending = MCSession.Pending(
        deliver: { session, delegate in
          delegate?.session(
            session, didStartReceivingResourceWithName: resourceName,
            fromPeer: session.object(for: peer), with: progress)
        }, done: handled)
      session.received(pending, from: peer)
    case .finished(let name, let peer, let result, _):
      let resourceName = ResourceName.unescape(name)
      let url: URL?
      let error: MCError?
      switch result {
      case .success(let placed):
        url = placed
        error = placed == nil ? MCError(.unknown, "the resource was not stored") : nil
      case .failure(let failure):
        url = nil
        error = MCError(failure)
      }
      let pending = MCSession.Pending(
        deliver: { session, delegate in
          delegate?.session(
            session, didFinishReceivingResourceWithName: resourceName,
            fromPeer: session.object(for: peer), at: url, withError: error)
        },
        done: {
          // Not moved by the delegate (or never shown to it): deleted, as on Apple's platforms.
          if let url { unlink(url.path) }
          handled()
        })
      session.received(pending, from: peer)
    case .offerRefused, .offerReceived, .offerFinished, .identical, .staleStagingRemoved:
      handled()
    }
  }
}
