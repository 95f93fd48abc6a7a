import Ferry
import Foundation

/// The tasks that read a Ferry session's streams and feed an ``MCSession``'s gate: one per
/// stream, each holding the session weakly (so that releasing it closes the Ferry session,
/// which ends the streams and the tasks). Sending is ``OutgoingMessages``'.
enum SessionBridge {
  static func start(_ session: MCSession) {
    let ferry = session.ferrySession
    let changes = ferry.stateChanges
    Task { [weak session] in
      for await change in changes {
        let replaced = change.end?.isSuperseded == true
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
            session.received(pending, from: message.peer)
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
        session.received(pending, from: stream.peer)
      }
    }

    let offers = ferry.resourceOffers
    let options = ReceiveOptions(destination: session.resourceFolder, relocate: false)
    Task { [weak session] in
      for await offer in offers {
        guard let session else {
          offer.decline(reason: "the session was released")
          continue
        }
        // At most SessionLimits.maximumIncomingOffers wait here; nothing is written before.
        Task { await ReceivedResources.decide(offer, for: session, options: options) }
      }
    }

    let resources = ferry.resourceEvents
    Task { [weak session] in
      for await event in resources {
        // One event at a time, each after the delegate has had the one before.
        await withCheckedContinuation { (handled: CheckedContinuation<Void, Never>) in
          guard let session else { return handled.resume() }
          ReceivedResources.forward(event, to: session) { handled.resume() }
        }
      }
    }
  }
}
