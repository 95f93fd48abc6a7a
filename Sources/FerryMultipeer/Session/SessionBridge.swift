import Ferry
import Foundation

/// The tasks that read a Ferry session's streams and feed an ``MCSession``'s gate: one per
/// stream, each holding the session weakly (so that releasing it closes the Ferry session,
/// which ends the streams and the tasks), plus the one that sends queued messages in order.
enum SessionBridge {
  static func start(_ session: MCSession, sending messages: AsyncStream<MCSession.OutgoingMessage>)
  {
    let ferry = session.ferrySession
    let changes = ferry.stateChanges
    Task { [weak session] in
      for await change in changes {
        let replaced = [Session.replacedReason, Session.crossedReason].contains {
          change.reason?.hasSuffix($0) == true
        }
        session?.gate {
          $0.ferryReported(change.state, for: change.peer, replacedByPeer: replaced)
        }
      }
    }

    let received = ferry.messages
    Task { [weak session] in
      do {
        for try await message in received {
          // The next message is taken once the delegate has had this one: the rest wait in
          // Ferry's flow-control window, so a slow delegate slows the sender down.
          await withCheckedContinuation { (handled: CheckedContinuation<Void, Never>) in
            guard let session else { return handled.resume() }
            let data = message.bytes
            let pending = MCSession.Pending(
              deliver: { session, delegate in
                delegate?.session(
                  session, didReceive: data, fromPeer: session.object(for: message.peer))
              },
              done: { handled.resume() })
            session.gate { $0.received(pending, from: message.peer) }
          }
        }
      } catch {
        // The session closed.
      }
    }

    let streams = ferry.incomingStreams
    Task { [weak session] in
      for await stream in streams {
        guard let session else {
          stream.cancel(reason: "the session was released")
          continue
        }
        // Handed to the delegate only, on the session's queue.
        let input = UncheckedBox(FerryInputStream(stream))
        let name = stream.name
        let pending = MCSession.Pending(
          deliver: { session, delegate in
            delegate?.session(
              session, didReceive: input.value, withName: name,
              fromPeer: session.object(for: stream.peer))
          },
          done: {})
        session.gate { $0.received(pending, from: stream.peer) }
      }
    }

    let resources = ferry.resourceEvents
    Task { [weak session] in
      for await event in resources {
        guard let session else { continue }
        ReceivedResources.forward(event, to: session)
      }
    }

    Task {
      for await message in messages {
        // Errors past the checks send(_:toPeers:with:) made at once (a peer that left
        // meanwhile) reach the delegate as that peer's notConnected.
        _ = try? await ferry.send(message.data, to: message.peers, mode: message.mode)
      }
    }
  }
}
