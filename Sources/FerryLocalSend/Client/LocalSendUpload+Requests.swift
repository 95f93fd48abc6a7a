import Ferry
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

extension LocalSendUpload {
  /// The prepare-upload: its answer, nil when there is nothing to upload (204).
  func prepare(
    _ request: PrepareUploadRequest, to target: LocalSendTarget, pin: String?
  ) async throws(LocalSendSendError) -> PrepareUploadResponse? {
    var path = LocalSendProtocol.Path.prepareUpload
    if let pin { path += "?pin=\(Self.escaped(pin))" }
    let answer: LocalSendClient.Answer
    do {
      answer = try await client.request(
        .POST, host: target.host, port: target.port, path: path,
        body: .json(LocalSendJSON.encode(request)), expecting: target.fingerprint,
        plainHTTP: target.plainHTTP, answerTimeout: Self.decisionTimeout)
    } catch {
      throw .request(error)
    }
    let words = Self.words(of: answer.body)
    switch answer.status.code {
    case 200:
      do throws(LocalSendJSONError) {
        return try LocalSendJSON.decode(PrepareUploadResponse.self, from: answer.body)
      } catch {
        throw .refused(200, error.description)
      }
    case 204: return nil
    case 401: throw .pinRequired
    case 403: throw .declined(words)
    case 409: throw .busy
    case 429: throw .tooManyPinAttempts
    default: throw .refused(Int(answer.status.code), words)
    }
  }

  /// What an answer's body says, for a person: the `message` of a JSON body (LocalSend's
  /// apps answer `{"message": "…"}`), else its text, at most 512 bytes; empty for a body of
  /// nothing worth showing.
  static func words(of body: [UInt8]) -> String {
    let head = Array(body.prefix(4096))
    if let object = try? JSONSerialization.jsonObject(with: Data(head)) as? [String: Any] {
      return (object["message"] as? String).map { String($0.prefix(512)) } ?? ""
    }
    let text = String(decoding: head.prefix(512), as: UTF8.self)
      .trimmingCharacters(in: .whitespacesAndNewlines)
    return text.hasPrefix("{") || text.hasPrefix("<") ? "" : text
  }

  func upload(
    _ item: (url: URL, path: String, size: UInt64), index: Int, token: String, session: String,
    to target: LocalSendTarget, progress: TransferProgress,
    pool: NIOLockedValueBox<[LocalSendConnection]>
  ) async -> (Int, String?) {
    let path =
      "\(LocalSendProtocol.Path.upload)?sessionId=\(Self.escaped(session))"
      + "&fileId=f\(index)&token=\(Self.escaped(token))"
    let moved = Atomic<UInt64>(0)
    // A kept connection the device closed just as it was taken fails before any byte: the
    // file then goes once more, on a new connection.
    for attempt in 0..<2 {
      let reused = attempt == 0 ? Self.take(from: pool) : nil
      let connection: LocalSendConnection
      if let reused {
        connection = reused
      } else {
        do {
          connection = try await client.connect(
            host: target.host, port: target.port, expecting: target.fingerprint,
            plainHTTP: target.plainHTTP)
        } catch {
          return (0, error.description)
        }
        connections.withLock { $0[ObjectIdentifier(connection)] = connection }
      }
      if cancelled.load(ordering: .relaxed) { connection.close() }
      do {
        let (answer, reusable) = try await connection.exchange(
          .POST, path: path,
          body: .file(item.url, size: item.size) { count in
            let total = moved.add(UInt64(count), ordering: .relaxed).newValue
            progress.advance(index, to: total)
          }, answerTimeout: Self.uploadAnswerTimeout)
        if reusable {
          pool.withLockedValue { $0.append(connection) }
        } else {
          forget(connection)
        }
        let words = Self.words(of: answer.body)
        return (Int(answer.status.code), answer.status.code == 200 ? nil : words)
      } catch {
        forget(connection)
        if reused != nil, moved.load(ordering: .relaxed) == 0,
          !cancelled.load(ordering: .relaxed)
        {
          continue
        }
        return (0, error.description)
      }
    }
    return (0, "the device closed the connection")
  }

  /// How long a device may take to answer an upload once its body is sent (it verifies and
  /// places the file first: a large one's flush to disk takes a while).
  static let uploadAnswerTimeout: Duration = .seconds(120)

  /// A kept connection still open, if the pool has one.
  static func take(from pool: NIOLockedValueBox<[LocalSendConnection]>)
    -> LocalSendConnection?
  {
    pool.withLockedValue { pool -> LocalSendConnection? in
      while let last = pool.popLast() {
        if last.channel.isActive { return last }
        last.close()
      }
      return nil
    }
  }

  /// Closes `connection` and stops tracking it.
  func forget(_ connection: LocalSendConnection) {
    connection.close()
    connections.withLock { $0[ObjectIdentifier(connection)] = nil }
  }
}
