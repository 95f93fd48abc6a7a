import Ferry
import Foundation
import Synchronization

/// The messages ``MCSession/send(_:toPeers:with:)`` queued: one queue and one sending task per
/// peer, so that a peer that stops reading holds up only its own messages, each queue capped
/// at ``maximumQueuedBytes``. A queue exists while it holds something.
final class OutgoingMessages: Sendable {
  /// The most bytes queued for one peer; a reliable message beyond it is refused.
  static let maximumQueuedBytes = 8 << 20

  private struct Queue {
    let continuation: AsyncStream<(Data, SendMode)>.Continuation
    var bytes: Int
  }

  private let ferry: Session
  private let stillConnected: @Sendable (PeerID) -> Bool
  private let queues = Mutex<[Fingerprint: Queue]>([:])

  /// - Parameter stillConnected: Whether the delegate still counts the peer as connected
  ///   (a reliable message that meets no link then waits: the peer's link is being replaced).
  init(ferry: Session, stillConnected: @escaping @Sendable (PeerID) -> Bool) {
    self.ferry = ferry
    self.stillConnected = stillConnected
  }

  /// Queues `data` for each of `peers`, in call order. A reliable message is queued for all of
  /// them or none; an unreliable one is dropped for a peer whose queue is not empty (the
  /// link is congested).
  ///
  /// - Throws: ``MCError`` `unknown` when a peer's queue would pass ``maximumQueuedBytes``.
  func enqueue(_ data: Data, to peers: [PeerID], mode: SendMode) throws(MCError) {
    var started: [(PeerID, AsyncStream<(Data, SendMode)>)] = []
    try queues.withLock { queues throws(MCError) in
      if mode == .reliable {
        for peer in peers
        where (queues[peer.fingerprint]?.bytes ?? 0) + data.count > Self.maximumQueuedBytes {
          throw MCError(
            .unknown,
            "\(Self.maximumQueuedBytes >> 20) MiB are already queued for \(peer.displayName), "
              + "who is not reading them")
        }
      }
      for peer in peers {
        if var queue = queues[peer.fingerprint] {
          if mode == .unreliable { continue }
          queue.bytes += data.count
          queue.continuation.yield((data, mode))
          queues[peer.fingerprint] = queue
        } else {
          let (stream, continuation) = AsyncStream<(Data, SendMode)>.makeStream()
          continuation.yield((data, mode))
          queues[peer.fingerprint] = Queue(continuation: continuation, bytes: data.count)
          started.append((peer, stream))
        }
      }
    }
    for (peer, stream) in started {
      Task { await drain(stream, to: peer) }
    }
  }

  /// Ends every queue (the session is going away).
  func finishAll() {
    let all = queues.withLock { queues in
      defer { queues = [:] }
      return queues.values.map(\.continuation)
    }
    for continuation in all { continuation.finish() }
  }

  /// Sends a peer's queue in order, until it is empty.
  private func drain(_ stream: AsyncStream<(Data, SendMode)>, to peer: PeerID) async {
    for await (data, mode) in stream {
      while true {
        do {
          try await ferry.send(data, to: [peer], mode: mode)
        } catch .notConnected where mode == .reliable && stillConnected(peer) {
          try? await Task.sleep(for: .milliseconds(20))
          continue
        } catch {
          // The peer left: the delegate hears notConnected from its link's end.
        }
        break
      }
      let done = queues.withLock { queues -> AsyncStream<(Data, SendMode)>.Continuation? in
        guard var queue = queues[peer.fingerprint] else { return nil }
        queue.bytes -= data.count
        guard queue.bytes <= 0 else {
          queues[peer.fingerprint] = queue
          return nil
        }
        queues[peer.fingerprint] = nil
        return queue.continuation
      }
      done?.finish()
    }
  }
}
