import Foundation
import Synchronization

/// The stream delegate and run loops of one ``FerryInputStream`` or ``FerryOutputStream``, and
/// the delivery of `Stream.Event`s to them. Thread-safe.
///
/// Each (run loop, mode) the stream is scheduled in has a queue of events not yet delivered
/// (none scheduled: no events, as with Apple's streams). Under one lock, an event joins every
/// queue, and a queue that had no drain on its way gets one: the lock marks it posted, then a
/// block performed in the mode, a timer due at once (adding it arms the loop's timer, which
/// wakes a loop that waits: `RunLoop.perform` alone does not, on Linux) and a repeating
/// backstop timer are handed to the run loop. Each of the three drains the queue on the run
/// loop's thread, in order, until it is empty, and only then clears the mark, under the same
/// lock: an event emitted meanwhile is either taken by that drain or posts a new one. The
/// backstop, which alone re-arms itself from the run loop's own thread, is invalidated by the
/// drain that empties the queue, so an idle stream holds no timer.
///
/// `hasBytesAvailable` and `hasSpaceAvailable` are level-triggered: one that is already waiting
/// in a queue is not queued twice. A delegate that runs the run loop again from its callout
/// hears nothing more until it returns (CFStream's sources are not re-entered either).
final class StreamEvents: Sendable {
  /// How often a run loop with undelivered events drains them even if nothing woke it.
  static let backstopInterval: TimeInterval = 0.05

  private struct Schedule: Hashable {
    let runLoop: ObjectIdentifier
    let mode: RunLoop.Mode
  }

  /// One (run loop, mode)'s events and the state of their delivery.
  private struct Queue {
    let runLoop: UncheckedBox<RunLoop>
    /// Emitted and not yet taken by a drain, oldest first.
    var pending: [Stream.Event] = []
    /// A drain is on its way (performed and woken) or running: emits only append.
    var posted = false
    /// A drain is delivering (on the run loop's thread): another one, nested in a callout,
    /// returns at once.
    var draining = false
    /// The repeating timer of the current post, until a drain finds the queue empty.
    var backstop: UncheckedBox<Timer>?
  }

  private struct State {
    var delegate: WeakReference<any StreamDelegate>?
    var queues: [Schedule: Queue] = [:]
  }

  private let state = Mutex(State())

  /// The delegate, held weakly.
  var delegate: (any StreamDelegate)? {
    get { state.withLock { $0.delegate }?.object }
    set {
      let reference = newValue.map { WeakReference($0) }
      state.withLock { $0.delegate = reference }
    }
  }

  /// Events go to `runLoop` in `mode` from now on.
  func schedule(in runLoop: RunLoop, forMode mode: RunLoop.Mode) {
    let box = UncheckedBox(runLoop)
    let schedule = Schedule(runLoop: ObjectIdentifier(runLoop), mode: mode)
    state.withLock {
      if $0.queues[schedule] == nil { $0.queues[schedule] = Queue(runLoop: box) }
    }
  }

  /// Events no longer go to `runLoop` in `mode`; those not yet delivered there are dropped.
  func remove(from runLoop: RunLoop, forMode mode: RunLoop.Mode) {
    let schedule = Schedule(runLoop: ObjectIdentifier(runLoop), mode: mode)
    let removed = state.withLock { $0.queues.removeValue(forKey: schedule) }
    removed?.backstop?.value.invalidate()
  }

  /// The stream closed: no more events anywhere, as with Apple's streams, and no timer left
  /// holding the stream.
  func removeAll() {
    let removed = state.withLock { state -> [Queue] in
      let queues = Array(state.queues.values)
      state.queues = [:]
      return queues
    }
    for queue in removed { queue.backstop?.value.invalidate() }
  }

  /// Queues `event` about `stream` for the delegate on each scheduled run loop and mode, and
  /// posts a drain to each that has none on its way.
  func emit(_ event: Stream.Event, from stream: Stream) {
    let levelTriggered = event == .hasBytesAvailable || event == .hasSpaceAvailable
    let posts = state.withLock { state -> [(Schedule, UncheckedBox<RunLoop>)] in
      var posts: [(Schedule, UncheckedBox<RunLoop>)] = []
      for (schedule, var queue) in state.queues {
        if levelTriggered && queue.pending.contains(event) { continue }
        queue.pending.append(event)
        if !queue.posted {
          queue.posted = true
          posts.append((schedule, queue.runLoop))
        }
        state.queues[schedule] = queue
      }
      return posts
    }
    for (schedule, runLoop) in posts {
      post(schedule, to: runLoop.value, about: stream)
    }
  }

  /// Hands the run loop the three ways a drain reaches it (see the type's comment).
  private func post(_ schedule: Schedule, to runLoop: RunLoop, about stream: Stream) {
    let target = UncheckedBox((stream, self))
    let drain: @Sendable () -> Void = {
      let (stream, events) = target.value
      events.drain(schedule, about: stream)
    }
    let backstop = Timer(timeInterval: Self.backstopInterval, repeats: true) { _ in drain() }
    backstop.tolerance = Self.backstopInterval
    let boxed = UncheckedBox(backstop)
    let (kept, replaced) = state.withLock { state -> (Bool, UncheckedBox<Timer>?) in
      guard state.queues[schedule] != nil else { return (false, nil) }
      let replaced = state.queues[schedule]?.backstop
      state.queues[schedule]?.backstop = boxed
      return (true, replaced)
    }
    replaced?.value.invalidate()
    guard kept else { return }  // removed meanwhile: nothing to deliver there
    runLoop.perform(inModes: [schedule.mode], block: drain)
    runLoop.add(backstop, forMode: schedule.mode)
    // Added last, due now: arms the loop's timer, which wakes a loop that waits.
    runLoop.add(Timer(timeInterval: 0, repeats: false) { _ in drain() }, forMode: schedule.mode)
  }

  /// Delivers the events queued for `schedule` until none is left (on its run loop).
  private func drain(_ schedule: Schedule, about stream: Stream) {
    let entered = state.withLock { state -> Bool in
      guard state.queues[schedule]?.draining == false else { return false }
      state.queues[schedule]?.draining = true
      return true
    }
    guard entered else { return }  // removed, or nested in a callout of the running drain
    while true {
      let taken = state.withLock { state -> ([Stream.Event], UncheckedBox<Timer>?) in
        guard var queue = state.queues[schedule] else { return ([], nil) }
        let events = queue.pending
        var idle: UncheckedBox<Timer>?
        queue.pending = []
        if events.isEmpty {
          // Cleared with the queue seen empty: the next emit posts again.
          queue.posted = false
          queue.draining = false
          idle = queue.backstop
          queue.backstop = nil
        }
        state.queues[schedule] = queue
        return (events, idle)
      }
      let (events, idle) = taken
      if events.isEmpty {
        idle?.value.invalidate()
        return
      }
      for event in events {
        // Read for each event: a callout may change the delegate or remove the schedule.
        guard let delegate = state.withLock({ $0.queues[schedule] == nil ? nil : $0.delegate })
        else { continue }
        delegate.object?.stream(stream, handle: event)
      }
    }
  }
}
