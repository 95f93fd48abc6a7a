import Ferry
import NIOCore
import NIOHTTP1

extension LocalSendEndpoints {
  /// `register`: a device announces itself (its description must claim the certificate it
  /// presented); it is told who this one is.
  func register(_ body: [UInt8], from address: String) -> HTTPAnswer {
    let device: LocalSendDevice
    do throws(LocalSendJSONError) {
      device = try LocalSendJSON.decode(LocalSendDevice.self, from: body).validated()
    } catch {
      return .text(.badRequest, error.description)
    }
    guard claimsPresentedCertificate(device) else {
      return .text(.forbidden, "the fingerprint is not the certificate's")
    }
    server.registrationsContinuation.yield(
      LocalSendRegistration(device: device, address: address, proven: provenKey != nil))
    return .json(.ok, LocalSendJSON.encode(server.device.answer))
  }

  /// `prepare-upload`: a session starts and its files (or text) are asked about; the answer
  /// comes when the transfer core decides. Returns what the request waits on: the session.
  func prepare(
    _ body: [UInt8], pin: String?, userAgent: String?, _ request: HTTPRequest, reply: HTTPReply
  ) -> Work? {
    let offer: PrepareUploadRequest
    do throws(LocalSendJSONError) {
      offer = try LocalSendJSON.decode(PrepareUploadRequest.self, from: body).validated()
    } catch {
      let status: HTTPResponseStatus
      if case .tooLarge = error { status = .payloadTooLarge } else { status = .badRequest }
      reply(.text(status, error.description))
      return nil
    }
    guard claimsPresentedCertificate(offer.info) else {
      reply(.text(.forbidden, "the fingerprint is not the certificate's"))
      return nil
    }
    let id = Secrets.token()
    let verdict = server.sessions.withLock {
      let verdict = $0.prepare(
        from: request.address, pin: pin, id: id, owner: provenKey, now: .now)
      // Counted under the sessions' lock, so that its end cannot be counted first.
      if case .start = verdict { server.sessionsUnderWay.increment() }
      return verdict
    }
    switch verdict {
    case .busy:
      reply(.text(.conflict, "another session is under way"))
      return nil
    case .pinRequired:
      reply(.text(.unauthorized, "PIN required"))
      return nil
    case .tooManyAttempts:
      reply(.text(.tooManyRequests, "too many wrong PINs"))
      return nil
    case .start: break
    }
    let promise = request.channel.eventLoop.makePromise(of: UploadSession.Preparation.self)
    promise.futureResult.whenSuccess { [self] preparation in
      reply(prepared(preparation, session: id))
    }
    LocalSendOffers.start(
      offer, id: id,
      sender: sender(offer.info, at: request.address, userAgent: userAgent), server: server,
      answer: promise)
    return .preparing(session: id)
  }

  /// The prepare-upload's answer, once the core decided: tokens (200), nothing wanted (204), a
  /// text shown (204) or declined (403), a refusal.
  private func prepared(_ preparation: UploadSession.Preparation, session id: String)
    -> HTTPAnswer
  {
    switch preparation {
    case .accepted(let uploads) where uploads.isEmpty:
      // Nothing wanted (every file skipped): nothing to upload, as LocalSend says it.
      server.end(id)
      return .text(.noContent, "")
    case .accepted(let uploads):
      guard server.sessions.withLock({ $0.accepted(id, uploads: uploads) }) else {
        // The sender left (or cancelled) before it was answered: the session is over.
        server.end(id)
        return .text(.conflict, "the session is over")
      }
      return .json(
        .ok,
        LocalSendJSON.encode(
          PrepareUploadResponse(sessionId: id, files: uploads.mapValues(\.token))))
    case .text(let shown):
      server.end(id)
      return .text(shown ? .noContent : .forbidden, shown ? "" : "declined")
    case .refused(let status, let reason):
      server.end(id)
      return .text(status, reason)
    }
  }

  /// `cancel`: the sender ends its session (only its own: the address and certificate that
  /// prepared it). Always 200, as LocalSend answers it.
  func cancel(_ session: String?, from address: String) -> HTTPAnswer {
    guard
      let id = server.sessions.withLock({
        $0.mayCancel(session, from: address, certificate: provenKey)
      })
    else {
      // Nothing of this sender's to cancel.
      return .text(.ok, "")
    }
    // Over at once for the sender (its next prepare-upload is not busy); the core cleans up
    // behind it. A text being asked about stays the one question until it is answered (or
    // times out), so that cancels cannot pile up questions.
    server.cancel(id, reason: "the sender cancelled")
    return .text(.ok, "")
  }

  /// `upload`: one accepted file's body, from the address (and certificate) that prepared the
  /// session, with its token, once; streamed to the core.
  func startUpload(
    _ head: HTTPRequestHead, query: [String: String], _ request: HTTPRequest, reply: HTTPReply
  ) -> HTTPRequestStateMachine<Work>.Decision {
    guard let sessionId = query["sessionId"], let fileId = query["fileId"],
      let token = query["token"]
    else { return .answer(.text(.badRequest, "missing parameters")) }
    let admission = server.sessions.withLock {
      $0.admit(
        fileId, token: token, session: sessionId, from: request.address, certificate: provenKey)
    }
    let accepted: UploadSessionMachine.Upload
    switch admission {
    case .unknownSession: return .answer(.text(.conflict, "no such session"))
    case .forbidden: return .answer(.text(.forbidden, "forbidden"))
    case .tooMany:
      return .answer(.text(.tooManyRequests, "too many uploads at once", closing: true))
    case .alreadyUploaded: return .answer(.text(.conflict, "uploaded already"))
    case .upload(let upload): accepted = upload
    }
    guard let session = server.session(sessionId) else {
      return .answer(.text(.conflict, "no such session"))
    }
    if let length = head.headers.first(name: "content-length").flatMap({ UInt64($0) }),
      length > accepted.size
    {
      session.offer?.violation("the upload of file \(fileId) is longer than announced")
      return .answer(
        .text(.badRequest, "the body is longer than the size announced", closing: true))
    }
    let promise = request.channel.eventLoop.makePromise(of: UploadSession.Verdict.self)
    session.uploadStarted(accepted.index, on: request.channel, verdict: promise)
    promise.futureResult.whenSuccess { [server] verdict in
      // The file's upload is over even when its connection is gone (a sender that sent the
      // whole body and closed before the answer): its slot among the uploads at once is given
      // back here, not only when the answer can be written.
      server.sessions.withLock { $0.uploadEnded(fileId, session: sessionId, retry: false) }
      session.connectionEnded(request.channel)
      switch verdict {
      case .stored: reply(.text(.ok, ""))
      case .corrupt(let reason), .failed(let reason): reply(.text(verdict.status, reason))
      }
    }
    return .stream(
      .upload(
        Upload(session: session, fileId: fileId, index: accepted.index, digest: accepted.digest)),
      size: accepted.size)
  }
}
