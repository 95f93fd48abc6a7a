import Foundation
import Synchronization

/// The stream delegate and run loops of one ``FerryInputStream`` or ``FerryOutputStream``, and
/// the delivery of `Stream.Event`s to them: each event is performed on every run loop the
/// stream is scheduled in (none: no events, as with Apple's streams). Thread-safe.
final class StreamEvents: Sendable {
  private struct State {
    var delegate: WeakReference<any StreamDelegate>?
    var runLoops: [ObjectIdentifier: UncheckedBox<RunLoop>] = [:]
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

  /// Events go to `runLoop` from now on.
  func schedule(in runLoop: RunLoop) {
    let box = UncheckedBox(runLoop)
    state.withLock { $0.runLoops[ObjectIdentifier(runLoop)] = box }
  }

  /// Events no longer go to `runLoop`.
  func remove(from runLoop: RunLoop) {
    state.withLock { $0.runLoops[ObjectIdentifier(runLoop)] = nil }
  }

  /// Delivers `event` about `stream` to the delegate on each scheduled run loop.
  func emit(_ event: Stream.Event, from stream: Stream) {
    let runLoops = state.withLock { Array($0.runLoops.values) }
    let target = UncheckedBox((stream, self))
    for runLoop in runLoops {
      runLoop.value.perform {
        let (stream, events) = target.value
        events.delegate?.stream(stream, handle: event)
      }
    }
  }
}
