import Foundation
import Synchronization

/// The stream delegate and run loops of one ``FerryInputStream`` or ``FerryOutputStream``, and
/// the delivery of `Stream.Event`s to them: each event is performed on every (run loop, mode)
/// the stream is scheduled in (none: no events, as with Apple's streams), in order, with a
/// one-shot timer that wakes a run loop that is waiting (`RunLoop.perform` alone does not, on
/// Linux). Thread-safe.
final class StreamEvents: Sendable {
  private struct Schedule: Hashable {
    let runLoop: ObjectIdentifier
    let mode: RunLoop.Mode
  }

  private struct State {
    var delegate: WeakReference<any StreamDelegate>?
    var schedules: [Schedule: UncheckedBox<RunLoop>] = [:]
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
    state.withLock { $0.schedules[Schedule(runLoop: ObjectIdentifier(runLoop), mode: mode)] = box }
  }

  /// Events no longer go to `runLoop` in `mode`.
  func remove(from runLoop: RunLoop, forMode mode: RunLoop.Mode) {
    _ = state.withLock {
      $0.schedules.removeValue(forKey: Schedule(runLoop: ObjectIdentifier(runLoop), mode: mode))
    }
  }

  /// Delivers `event` about `stream` to the delegate on each scheduled run loop and mode.
  func emit(_ event: Stream.Event, from stream: Stream) {
    let schedules = state.withLock { Array($0.schedules) }
    let target = UncheckedBox((stream, self))
    for (schedule, runLoop) in schedules {
      runLoop.value.perform(inModes: [schedule.mode]) {
        let (stream, events) = target.value
        events.delegate?.stream(stream, handle: event)
      }
      // perform only queues the block: a timer due now wakes a loop that waits.
      runLoop.value.add(Timer(timeInterval: 0, repeats: false) { _ in }, forMode: schedule.mode)
    }
  }
}
