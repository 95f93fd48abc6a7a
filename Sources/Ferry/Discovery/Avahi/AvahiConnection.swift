import CAvahi
import Synchronization

/// What an ``AvahiConnection`` tells its owner, always on the poll thread.
enum AvahiConnectionEvent {
  /// The daemon is up and its host name settled: (re)create entry groups and browsers on `client`.
  case running(client: OpaquePointer)
  /// The daemon is (re)registering its host name, or it collided: entry groups must be reset and
  /// re-added when ``running(client:)`` comes again.
  case registering
  /// The connection to the daemon was lost and every Avahi object made on the old client is
  /// already freed; the connection waits for the daemon to come back.
  case disconnected(reason: String)
}

/// One connection to avahi-daemon over D-Bus, driven by an `avahi_threaded_poll`.
///
/// Threading model: libavahi-client is not thread-safe. The threaded poll owns one thread that
/// runs every Avahi callback with the poll lock held. Everything this class and its users do with
/// Avahi objects happens either in those callbacks or inside ``withLock(_:)``, so Avahi state is
/// never touched by two threads at once; that confinement is why the class is `@unchecked
/// Sendable`. Callbacks never call application code directly: they hand events to
/// `AsyncStream` continuations.
///
/// When the daemon goes away, the client is freed and replaced by one created with
/// `AVAHI_CLIENT_NO_FAIL`, which waits for the daemon to return (the pattern `avahi-publish`
/// uses); the owner re-creates its objects on the next ``AvahiConnectionEvent/running(client:)``.
final class AvahiConnection: @unchecked Sendable {
  private let poll: OpaquePointer
  private let context: CallbackContext
  private var client: OpaquePointer?
  /// Set once by ``close()``. Atomic rather than guarded by the poll lock, because after close
  /// the poll (and its mutex) is freed.
  private let closedFlag = Atomic<Bool>(false)
  private var closed: Bool { closedFlag.load(ordering: .acquiring) }

  /// The poll's vtable, for timeouts.
  fileprivate var pollAPI: UnsafePointer<AvahiPoll>? { avahi_threaded_poll_get(poll) }

  /// Connects to avahi-daemon and starts the poll thread.
  ///
  /// `handler` is called on the poll thread, with the lock held, for every state change,
  /// starting with ``AvahiConnectionEvent/running(client:)`` if the daemon is already up.
  ///
  /// - Throws: ``DiscoveryError/discoveryUnavailable(reason:)`` when there is no system bus or no
  ///   avahi-daemon on it.
  init(handler: @escaping (AvahiConnectionEvent) -> Void) throws(DiscoveryError) {
    guard let poll = avahi_threaded_poll_new() else {
      throw .discoveryUnavailable(reason: "cannot create the Avahi poll loop")
    }
    self.poll = poll
    self.context = CallbackContext(handler: handler)
    context.connection = self

    // First attempt without NO_FAIL, so that an absent daemon is an error now rather than a
    // silent wait.
    var error: Int32 = 0
    let client = avahi_client_new(
      avahi_threaded_poll_get(poll), AvahiClientFlags(0), clientCallback,
      Unmanaged.passUnretained(context).toOpaque(), &error)
    // On the failure paths below, `deinit` runs (every stored property is set by now) and its
    // close() frees what was made; freeing here too would free twice.
    guard let client else {
      throw .discoveryUnavailable(reason: avahiErrorMessage(error))
    }
    self.client = client
    guard avahi_threaded_poll_start(poll) == 0 else {
      throw .discoveryUnavailable(reason: "cannot start the Avahi poll thread")
    }
  }

  deinit {
    close()
  }

  /// Runs `body` with the poll lock held, passing the current client (nil while the daemon is
  /// away). After ``close()`` it runs `body(nil)` without locking. Must not be called from the
  /// poll thread, nor at the same time as ``close()`` (owners serialize the two).
  func withLock<T>(_ body: (OpaquePointer?) throws -> T) rethrows -> T {
    guard !closed else { return try body(nil) }
    avahi_threaded_poll_lock(poll)
    defer { avahi_threaded_poll_unlock(poll) }
    return try body(client)
  }

  /// Stops the poll thread and frees the client with every object made on it; entry groups are
  /// withdrawn from the network as they are freed. Idempotent; must not be called from the poll
  /// thread.
  func close() {
    guard !closedFlag.exchange(true, ordering: .acquiringAndReleasing) else { return }
    // Once stopped (the thread joined), nothing else touches the client or the poll.
    avahi_threaded_poll_stop(poll)
    if let client {
      avahi_client_free(client)
      self.client = nil
    }
    avahi_threaded_poll_free(poll)
  }

  /// Runs `action` on the poll thread after `milliseconds`. Call on the poll thread or under the
  /// lock; nothing runs after ``close()``.
  func schedule(afterMilliseconds milliseconds: UInt32, _ action: @escaping () -> Void) {
    guard !closed, let api = pollAPI else { return }
    var when = timeval()
    avahi_elapse_time(&when, milliseconds, 0)
    let box = Unmanaged.passRetained(ScheduledAction(action: action, api: api))
    if api.pointee.timeout_new(api, &when, scheduledCallback, box.toOpaque()) == nil {
      box.release()
    }
  }

  /// Called on the poll thread for every client state change.
  fileprivate func clientStateChanged(_ changed: OpaquePointer, state: AvahiClientState) {
    // During avahi_client_new the callback runs before `client` is assigned.
    if client == nil || client == changed {
      client = changed
    }
    switch state {
    case AVAHI_CLIENT_S_RUNNING:
      context.handler(.running(client: changed))
    case AVAHI_CLIENT_S_REGISTERING, AVAHI_CLIENT_S_COLLISION:
      context.handler(.registering)
    case AVAHI_CLIENT_FAILURE:
      let reason = avahiErrorMessage(avahi_client_errno(changed))
      guard !closed else { return }
      reconnect(after: changed, reason: reason)
    default:  // AVAHI_CLIENT_CONNECTING: waiting for the daemon to appear.
      break
    }
  }

  /// Replaces a failed client by one that waits for the daemon (poll thread only).
  private func reconnect(after failed: OpaquePointer, reason: String) {
    avahi_client_free(failed)
    client = nil
    context.handler(.disconnected(reason: reason))
    createWaitingClient()
  }

  /// Creates a client that waits for the daemon; if even that fails (the system bus itself is
  /// gone), tries again every second (poll thread only).
  fileprivate func createWaitingClient() {
    guard !closed, client == nil else { return }
    var error: Int32 = 0
    client = avahi_client_new(
      avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL, clientCallback,
      Unmanaged.passUnretained(context).toOpaque(), &error)
    if client == nil {
      let api = avahi_threaded_poll_get(poll)!
      var when = timeval()
      avahi_elapse_time(&when, 1000, 0)
      _ = api.pointee.timeout_new(
        api, &when, retryCallback, Unmanaged.passUnretained(context).toOpaque())
    }
  }
}

/// Holds what the C callback needs; it exists before `avahi_client_new` runs the callback
/// synchronously. Touched on the poll thread, or during init before the thread starts.
private final class CallbackContext {
  let handler: (AvahiConnectionEvent) -> Void
  unowned(unsafe) var connection: AvahiConnection?

  init(handler: @escaping (AvahiConnectionEvent) -> Void) {
    self.handler = handler
  }
}

/// A one-shot action for ``AvahiConnection/schedule(afterMilliseconds:_:)``.
private final class ScheduledAction {
  let action: () -> Void
  let api: UnsafePointer<AvahiPoll>

  init(action: @escaping () -> Void, api: UnsafePointer<AvahiPoll>) {
    self.action = action
    self.api = api
  }
}

private let scheduledCallback: AvahiTimeoutCallback = { timeout, userdata in
  guard let userdata else { return }
  let scheduled = Unmanaged<ScheduledAction>.fromOpaque(userdata).takeRetainedValue()
  if let timeout {
    scheduled.api.pointee.timeout_free(timeout)
  }
  scheduled.action()
}

private let retryCallback: AvahiTimeoutCallback = { timeout, userdata in
  guard let userdata else { return }
  let context = Unmanaged<CallbackContext>.fromOpaque(userdata).takeUnretainedValue()
  if let timeout, let api = context.connection?.pollAPI {
    api.pointee.timeout_free(timeout)
  }
  context.connection?.createWaitingClient()
}

private let clientCallback: AvahiClientCallback = { client, state, userdata in
  guard let client, let userdata else { return }
  let context = Unmanaged<CallbackContext>.fromOpaque(userdata).takeUnretainedValue()
  context.connection?.clientStateChanged(client, state: state)
}

/// Avahi's message for an error code, e.g. "Daemon not running".
func avahiErrorMessage(_ code: Int32) -> String {
  guard let message = avahi_strerror(code) else { return "Avahi error \(code)" }
  return String(cString: message)
}
