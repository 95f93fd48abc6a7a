import Ferry
import NIOCore
import NIOHTTP1

/// One connection to a LocalSend device, for requests one after another (HTTP/1.1
/// keep-alive): each request's answer, and whether the connection may carry another. Any task,
/// one request at a time.
final class LocalSendConnection: Sendable {
  let channel: any Channel
  private let collector: AnswerCollector
  private let presented: PresentedCertificate
  let host: String
  let port: Int
  private let expected: Fingerprint?

  init(
    channel: any Channel, collector: AnswerCollector, presented: PresentedCertificate,
    host: String, port: Int, expected: Fingerprint?
  ) {
    self.channel = channel
    self.collector = collector
    self.presented = presented
    self.host = host
    self.port = port
    self.expected = expected
  }

  /// Sends `method path` with `body`; the device must make progress while it goes and answer
  /// within `answerTimeout` of its end (else the connection is closed).
  ///
  /// - Returns: The answer, and whether the connection may carry another request.
  /// - Throws: ``LocalSendRequestError``.
  func request(
    _ method: HTTPMethod, path: String, body: LocalSendClient.Body = .none,
    answerTimeout: Duration
  ) async throws(LocalSendRequestError) -> LocalSendClient.Answer {
    try await exchange(method, path: path, body: body, answerTimeout: answerTimeout).answer
  }

  /// As ``request(_:path:body:answerTimeout:)``, also saying whether the connection is still
  /// good for another request (the device kept it open).
  func exchange(
    _ method: HTTPMethod, path: String, body: LocalSendClient.Body = .none,
    answerTimeout: Duration
  ) async throws(LocalSendRequestError) -> (answer: LocalSendClient.Answer, reusable: Bool) {
    let (channel, collector, presented) = (self.channel, self.collector, self.presented)
    let answer = collector.expect(on: channel.eventLoop)
    let watch = RequestWatch(timeout: answerTimeout)
    let watchdog = channel.eventLoop.scheduleRepeatedTask(
      initialDelay: .seconds(1), delay: .seconds(1)
    ) { _ in
      if let failure = watch.overdue(
        at: .now, handshaken: collector.handshaken.load(ordering: .acquiring))
      {
        collector.fail(failure)
        channel.close(promise: nil)
      }
    }
    defer { watchdog.cancel() }
    do {
      try await LocalSendClient.send(
        method, path: path, host: host, body: body, on: channel, watch: watch)
      watch.sent(at: .now)
    } catch {
      // Our own failure (a file that could not be read): no answer is coming.
      if error is LocalSendRequestError { channel.close(promise: nil) }
      // A device may answer before it has read the whole body (a refusal): its answer wins,
      // and the connection is done.
      do {
        let (head, bytes) = try await answer.get()
        return (
          LocalSendClient.Answer(status: head.status, body: bytes, certificate: presented.value),
          false
        )
      } catch let answerError {
        // A certificate refused in the handshake fails the answer; the write fails only as the
        // channel closes after it. The refusal is what happened (and it is final), as is a
        // deadline the watchdog closed the connection for.
        if expected != nil, LocalSendClient.isCertificateRefusal(answerError) {
          throw failure(answerError)
        }
        if case .timedOut? = answerError as? LocalSendRequestError { throw .timedOut }
      }
      throw failure(error)
    }
    do {
      let (head, bytes) = try await answer.get()
      return (
        LocalSendClient.Answer(status: head.status, body: bytes, certificate: presented.value),
        head.isKeepAlive && channel.isActive
      )
    } catch {
      throw failure(error)
    }
  }

  /// Closes it.
  func close() {
    channel.close(promise: nil)
  }

  private func failure(_ error: any Error) -> LocalSendRequestError {
    if let error = error as? LocalSendRequestError { return error }
    if expected != nil, LocalSendClient.isCertificateRefusal(error) {
      return .wrongCertificate("\(host):\(port)")
    }
    return .failed(LocalSendClient.describe(error))
  }
}
