import Dispatch
import Ferry
import Foundation
import NIOCore

/// Turns an accepted-for-checking `prepare-upload` into what the application answers: a text
/// message (``LocalSendText``), or an offer of Ferry's transfer core whose front end is an
/// ``UploadSession``.
enum LocalSendOffers {
  /// Starts session `id` of `sender` for `request`; `answer` gets how the prepare-upload ends.
  static func start(
    _ request: PrepareUploadRequest, id: String, sender: LocalSendSender, server: LocalSendServer,
    answer: EventLoopPromise<UploadSession.Preparation>
  ) {
    if request.files.count == 1, let file = request.files.values.first, file.isText {
      return ask(text: file.preview ?? "", id: id, from: sender, server: server, answer: answer)
    }
    // In a stable order (the sender's ids are arbitrary): by name, then id.
    let files = request.files.map { (id: $0.key, file: $0.value) }.sorted {
      ($0.file.fileName, $0.id) < ($1.file.fileName, $1.id)
    }
    let offered = files.map { entry in
      let (seconds, nanoseconds) = modification(entry.file.metadata?.modified)
      return TransferFile(
        path: entry.file.fileName, size: entry.file.size, modificationSeconds: seconds,
        modificationNanoseconds: nanoseconds, permissions: 0o644, kind: .file)
    }
    let session = UploadSession(
      id: id, files: files, prepared: answer,
      isCurrent: { [weak server] in server?.sessions.withLock { $0.currentSession == id } ?? false
      },
      onEnd: { [weak server] in server?.end(id).ended ?? false })
    guard server.attach(.files(session), to: id) else {
      // Its sender left while its prepare-upload was read.
      return answer.succeed(.refused(.conflict, "the session is over"))
    }
    guard let question = OpenQuestions(limit: 1).open() else {
      // (A fresh limit of one always opens: never reached, but never a leaked promise.)
      server.end(id)
      return answer.succeed(.refused(.serviceUnavailable, "cannot ask now"))
    }
    let incoming = server.incomingContinuation
    // A file may be held (compared with this sender's copy instead of sent) only when its
    // SHA-256 comes with it: nothing else would tell the same content.
    let holdable = Set(files.indices.filter { (try? files[$0].file.digest()) != nil })
    let offer = IncomingOffer(
      peer: sender.peer, files: offered, checksum: .sha256,
      reception: .asking(question) { incoming.yield(.files($0, from: sender)) },
      holdsFiles: true, holdable: holdable, openFiles: LocalSendServer.Limits.parallelUploads,
      acknowledgesAtOnce: true, resumes: false, events: server.eventsContinuation,
      executor: DispatchQueue(label: "ferry.localsend.offer"),
      stall: server.configuration.stall, frontEnd: session)
    session.offer = offer
    offer.start()
  }

  /// Asks the application about a text message, session `id` (declined when nobody answers
  /// in time, withdrawn when its sender leaves).
  private static func ask(
    text: String, id: String, from sender: LocalSendSender, server: LocalSendServer,
    answer: EventLoopPromise<UploadSession.Preparation>
  ) {
    let message = LocalSendText(sender: sender, text: text) { shown in
      answer.succeed(.text(shown))
    }
    guard server.attach(.text(message), to: id) else {
      // Its sender left while its prepare-upload was read.
      return message.withdraw()
    }
    server.incomingContinuation.yield(.text(message))
    Task {
      try? await Task.sleep(for: ResourceOffer.decisionTimeout)
      message.decline(reason: "no answer in time")
    }
  }

  /// An RFC 3339 time as seconds and nanoseconds since 1970 (``LocalSendTime/parse(_:)``);
  /// now when there is none, it cannot be read, or it is more than some 3000 years away.
  static func modification(_ text: String?) -> (Int64, UInt32) {
    guard let text, let time = LocalSendTime.parse(text), abs(time.seconds) < 100_000_000_000
    else { return (Int64(Date().timeIntervalSince1970), 0) }
    return (time.seconds, time.nanoseconds)
  }
}
