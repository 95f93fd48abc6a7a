// ferry-test-peer: a separate process speaking the Ferry library, for tests that need a peer in
// another process or another network namespace (heartbeat after SIGKILL, multi-host
// invitations). Prints one JSON object per line on stdout.
//
//   ferry-test-peer advertise NAME SERVICE ANSWER [MAX_PENDING]
//       ANSWER: accept | decline:REASON | ignore | accept-after:SECONDS
//   ferry-test-peer invite HOST PORT [FINGERPRINT|-] [NAME]
//   ferry-test-peer send HOST PORT FINGERPRINT PATH...   (identity from $FERRY_HOME)
//   ferry-test-peer receive NAME SERVICE DIR     (accepts one offer into DIR, then exits;
//                                                 FERRY_TEST_OFFERS=N: N offers)
//   ferry-test-peer echo NAME SERVICE    (echoes messages; answers each stream, read slowly (20 ms a chunk),
//                                         with "stream NAME BYTES SHA256" as a message)
// FERRY_TEST_STALL_SECONDS sets the send and receive sessions' ConnectionTimeouts.transferStall.
import Crypto
import Ferry
import Foundation

/// The timers of the send and receive sessions.
let timeouts: ConnectionTimeouts = {
  var timeouts = ConnectionTimeouts()
  if let text = ProcessInfo.processInfo.environment["FERRY_TEST_STALL_SECONDS"],
    let seconds = Int(text)
  {
    timeouts.transferStall = .seconds(seconds)
  }
  return timeouts
}()

func emit(_ object: [String: Any]) {
  let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
  FileHandle.standardOutput.write(data + Data([0x0A]))
}

func status(_ status: KnownPeers.Status) -> String {
  switch status {
  case .known(let trusted): return trusted ? "trusted" : "known"
  case .new: return "new"
  case .changedKey: return "changed-key"
  case .similarName: return "similar-name"
  }
}

func watch(_ session: Session) {
  Task {
    for await change in session.stateChanges {
      emit([
        "event": "state", "peer": change.peer.displayName,
        "fingerprint": change.peer.fingerprint.hexString, "state": change.state.rawValue,
        "reason": change.reason ?? "",
      ])
    }
  }
}

/// Advertises `name` on `service` with `session`'s identity and prints the `listening` line.
func advertise(_ name: String, on service: String, into session: Session) async throws -> Advertiser
{
  let advertiser = try Advertiser(
    identity: session.identity, displayName: name, serviceType: try ServiceType(service))
  let published = try await advertiser.start()
  emit([
    "event": "listening", "name": published, "port": Int(advertiser.port),
    "fingerprint": session.identity.fingerprint.hexString,
  ])
  return advertiser
}

/// Accepts every invitation of `advertiser` into `session`, in the background.
func acceptAll(_ advertiser: Advertiser, into session: Session) {
  Task {
    for await invitation in advertiser.invitations { try await invitation.accept(into: session) }
  }
}

let arguments = Array(CommandLine.arguments.dropFirst())
let identity = Identity.generate()

do {
  switch arguments.first {
  case "advertise" where arguments.count >= 4:
    let (name, service, answer) = (arguments[1], try ServiceType(arguments[2]), arguments[3])
    let maximumPending = arguments.count > 4 ? Int(arguments[4]) ?? 8 : 8
    let session = try Session(identity: identity, displayName: name)
    watch(session)
    let advertiser = try Advertiser(
      identity: identity, displayName: name, serviceType: service,
      maximumPendingInvitations: maximumPending)
    let published = try await advertiser.start()
    emit([
      "event": "listening", "name": published, "port": Int(advertiser.port),
      "fingerprint": identity.fingerprint.hexString,
    ])
    for await invitation in advertiser.invitations {
      emit([
        "event": "invitation", "peer": invitation.peer.displayName,
        "fingerprint": invitation.fingerprint.hexString,
        "code": invitation.verificationCode.digits, "status": status(invitation.status),
        "context": String(decoding: invitation.context, as: UTF8.self),
      ])
      switch answer {
      case "accept":
        try await invitation.accept(into: session)
        emit(["event": "accepted", "peer": invitation.peer.displayName])
      case let text where text.hasPrefix("decline:"):
        invitation.decline(reason: String(text.dropFirst("decline:".count)))
      case let text where text.hasPrefix("accept-after:"):
        let delay = Double(text.dropFirst("accept-after:".count)) ?? 1
        Task {
          try await Task.sleep(for: .seconds(delay))
          do {
            try await invitation.accept(into: session)
            emit(["event": "accepted", "peer": invitation.peer.displayName])
          } catch {
            emit(["event": "accept-failed", "error": "\(error)"])
          }
        }
      default:
        break  // ignore: let it expire
      }
    }
  case "invite" where arguments.count >= 3:
    let expected =
      arguments.count > 3 && arguments[3] != "-" ? try Fingerprint(parsing: arguments[3]) : nil
    let name = arguments.count > 4 ? arguments[4] : "test-inviter"
    let session = try Session(identity: identity, displayName: name)
    watch(session)
    do {
      let peer = try await session.invite(
        host: arguments[1], port: UInt16(arguments[2])!, expecting: expected, timeout: .seconds(10))
      emit([
        "event": "connected", "peer": peer.displayName, "fingerprint": peer.fingerprint.hexString,
        "code": session.verificationCode(with: peer)?.digits ?? "",
      ])
    } catch {
      emit(["event": "error", "error": "\(error)"])
    }
    try await Task.sleep(for: .seconds(3600))
  case "receive" where arguments.count == 4:
    let session = try Session(identity: identity, displayName: arguments[1], timeouts: timeouts)
    session.receiveResources(ReceiveOptions(destination: URL(fileURLWithPath: arguments[3])))
    let advertiser = try await advertise(arguments[1], on: arguments[2], into: session)
    acceptAll(advertiser, into: session)
    var offers = ProcessInfo.processInfo.environment["FERRY_TEST_OFFERS"].flatMap { Int($0) } ?? 1
    for await event in session.resourceEvents {
      if case .offerFinished(let transfer, let error) = event {
        emit([
          "event": "received", "files": transfer.files.count, "bytes": Int(transfer.totalBytes),
          "error": error.map { "\($0)" } ?? "",
        ])
        offers -= 1
        if offers <= 0 { break }
      }
    }
    advertiser.stop()
  case "echo" where arguments.count == 3:
    let session = try Session(identity: identity, displayName: arguments[1])
    watch(session)
    let advertiser = try await advertise(arguments[1], on: arguments[2], into: session)
    acceptAll(advertiser, into: session)
    Task {
      for await stream in session.incomingStreams {
        var hasher = SHA256()
        var count = 0
        for try await chunk in stream.chunks {
          hasher.update(data: chunk)
          count += chunk.count
          try await Task.sleep(for: .milliseconds(20))  // a slow reader
        }
        let digest = hasher.finalize().map { String(format: "%02x", $0) }.joined()
        try await session.send(
          Array("stream \(stream.name) \(count) \(digest)".utf8), to: [stream.peer])
      }
    }
    for try await message in session.messages {
      try await session.send(message.data, to: [message.peer])
    }
  case "send" where arguments.count >= 5:
    let sender = try Identity.loadOrCreate()
    let session = try Session(identity: sender, displayName: "test-sender", timeouts: timeouts)
    let peer = try await session.invite(
      host: arguments[1], port: UInt16(arguments[2])!,
      expecting: try Fingerprint(parsing: arguments[3]))
    let items = try ResourceItem.expanding(arguments[4...].map { URL(fileURLWithPath: $0) })
    let transfer = try session.sendResources(items, to: peer)
    // FERRY_TEST_DIE_AFTER_BYTES=N: SIGKILL itself once N bytes are across — mid-file however
    // loaded the machine, which a test sending the signal cannot promise.
    let dieAfter = ProcessInfo.processInfo.environment["FERRY_TEST_DIE_AFTER_BYTES"].flatMap {
      Int64($0)
    }
    Task {
      for await snapshot in transfer.progress.snapshots {
        emit(["event": "progress", "bytes": snapshot.bytes, "sent": Int(transfer.bytesSent)])
        if let dieAfter, snapshot.bytes > dieAfter { kill(getpid(), SIGKILL) }
      }
    }
    do {
      let results = try await transfer.result()
      emit([
        "event": "sent", "bytes_sent": Int(transfer.bytesSent),
        "stored": results.filter { $0.status == .stored }.count,
      ])
    } catch {
      emit(["event": "error", "error": "\(error)", "bytes_sent": Int(transfer.bytesSent)])
    }
  default:
    FileHandle.standardError.write(Data("usage: see Tests/TestPeer/main.swift\n".utf8))
    exit(2)
  }
} catch {
  emit(["event": "error", "error": "\(error)"])
  exit(1)
}
