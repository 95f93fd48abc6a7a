import NIOCore
import Synchronization

/// The connections a server holds open, in all and from each address, and which of them are
/// idle (between requests): a new connection past a cap takes the place of the one idle the
/// longest (from its own address when that address is at its cap), so that kept-alive
/// connections that ask for `/info` now and then cannot shut honest senders out. A connection
/// with a request under way is never ended for another. Thread-safe.
package final class ConnectionSlots: Sendable {
  /// One open connection.
  private struct Slot {
    let address: String
    /// Since when it has been idle; nil while a request is under way.
    var idleSince: ContinuousClock.Instant?
    let channel: any Channel
  }

  private let open = Mutex<(next: Int, slots: [Int: Slot])>((0, [:]))
  private let total: Int
  private let perAddress: Int

  package init(total: Int, perAddress: Int) {
    self.total = total
    self.perAddress = perAddress
  }

  /// Takes `channel` from `address` in, idle, unless every slot it could have is busy: returns
  /// its slot's number (give it back with ``release(_:)``), or nil (then close it). A
  /// connection idle the longest may be closed to make room.
  package func admit(
    _ channel: any Channel, from address: String, now: ContinuousClock.Instant = .now
  )
    -> Int?
  {
    let (number, evicted) = open.withLock { open -> (Int?, (any Channel)?) in
      let fromAddress = open.slots.filter { $0.value.address == address }
      var victim: Int?
      if fromAddress.count >= perAddress {
        victim = Self.idlest(fromAddress)
        if victim == nil { return (nil, nil) }
      } else if open.slots.count >= total {
        victim = Self.idlest(open.slots)
        if victim == nil { return (nil, nil) }
      }
      let evicted = victim.flatMap { open.slots.removeValue(forKey: $0)?.channel }
      let number = open.next
      open.next &+= 1
      open.slots[number] = Slot(address: address, idleSince: now, channel: channel)
      return (number, evicted)
    }
    evicted?.close(promise: nil)
    return number
  }

  /// The slot idle the longest among `slots`, if any is idle.
  private static func idlest(_ slots: [Int: Slot]) -> Int? {
    slots.filter { $0.value.idleSince != nil }.min { $0.value.idleSince! < $1.value.idleSince! }?
      .key
  }

  /// Slot `number`'s connection started a request (it may not be taken for another).
  package func busy(_ number: Int) {
    open.withLock { $0.slots[number]?.idleSince = nil }
  }

  /// Slot `number`'s connection has no request under way now.
  package func idle(_ number: Int, now: ContinuousClock.Instant = .now) {
    open.withLock { open in
      if open.slots[number] != nil, open.slots[number]?.idleSince == nil {
        open.slots[number]?.idleSince = now
      }
    }
  }

  /// Slot `number`'s connection closed.
  package func release(_ number: Int) {
    _ = open.withLock { $0.slots.removeValue(forKey: number) }
  }

  /// Connections open now.
  package var count: Int { open.withLock { $0.slots.count } }
}
