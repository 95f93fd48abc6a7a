import CDBus
import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A private connection to the D-Bus session bus (libdbus-1), driven by a thread of its own:
/// it sends what it is given, hands each method's reply to its caller, and yields the signals
/// it matched. The thread sleeps in poll(2) on the bus's socket and a wake-up pipe: it costs
/// nothing while nothing happens. Any thread may call it.
final class SessionBus: @unchecked Sendable {
  /// One argument of a message, as the calls here need them.
  enum Value: Sendable {
    case string(String)
    case uint32(UInt32)
    case int32(Int32)
    case strings([String])
    /// `a{sv}` with boolean or byte variants (a notification's hints).
    case hints([(String, HintValue)])
  }

  /// A hint's value.
  enum HintValue: Sendable {
    case bool(Bool)
    case byte(UInt8)
  }

  /// A method's reply: its arguments (strings and integers), or the bus's error name.
  enum Reply: Sendable {
    case values([Reply.Value])
    case error(String)

    /// One argument of a reply.
    enum Value: Sendable, Equatable {
      case string(String)
      case uint32(UInt32)
      case strings([String])
      case other
    }
  }

  /// A signal the connection received: who sent it (its unique name), from which object,
  /// its interface, member and arguments. A signal addressed to this connection arrives
  /// whatever the match rule says: check who sent it.
  struct Signal: Sendable {
    let sender: String
    let path: String
    let interface: String
    let member: String
    let values: [Reply.Value]
  }

  private struct Outgoing: Sendable {
    let destination: String
    let path: String
    let interface: String
    let method: String
    let arguments: [Value]
    let reply: @Sendable (Reply) -> Void
  }

  // libdbus's connection, touched on the bus thread only (and at init, before it starts).
  private let connection: OpaquePointer
  private let queue = Mutex<(outgoing: [Outgoing], closed: Bool)>(([], false))
  private let wake: (read: Int32, write: Int32)
  /// The signals matched, as they come.
  let signals: AsyncStream<Signal>
  private let signalsContinuation: AsyncStream<Signal>.Continuation

  /// Connects to the session bus at `address` (nil: `DBUS_SESSION_BUS_ADDRESS`), and matches
  /// the signals `match` (a D-Bus match rule) selects. Nil when there is no session bus, or it
  /// refuses.
  init?(address: String? = nil, match: String) {
    guard let address = address ?? ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"],
      !address.isEmpty
    else { return nil }
    var error = DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    guard let connection = dbus_connection_open_private(address, &error) else { return nil }
    dbus_connection_set_exit_on_disconnect(connection, 0)
    guard dbus_bus_register(connection, &error) != 0 else {
      dbus_connection_close(connection)
      dbus_connection_unref(connection)
      return nil
    }
    dbus_bus_add_match(connection, match, &error)
    var pipe: [Int32] = [-1, -1]
    guard dbus_error_is_set(&error) == 0, Glibc.pipe(&pipe) == 0 else {
      dbus_connection_close(connection)
      dbus_connection_unref(connection)
      return nil
    }
    _ = fcntl(pipe[0], F_SETFD, FD_CLOEXEC)
    _ = fcntl(pipe[1], F_SETFD, FD_CLOEXEC)
    _ = fcntl(pipe[0], F_SETFL, O_NONBLOCK)
    _ = fcntl(pipe[1], F_SETFL, O_NONBLOCK)
    self.connection = connection
    wake = (pipe[0], pipe[1])
    (signals, signalsContinuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(64))
    let thread = Thread { [self] in run() }
    thread.name = "ferry.dbus"
    thread.start()
  }

  /// Calls `method` of `interface` on `destination`'s object `path` with `arguments`; `reply`
  /// gets its answer (an error too when the connection closes first), on the bus thread.
  func call(
    _ destination: String, _ path: String, _ interface: String, _ method: String,
    _ arguments: [Value], reply: @escaping @Sendable (Reply) -> Void = { _ in }
  ) {
    let accepted = queue.withLock { queue -> Bool in
      guard !queue.closed else { return false }
      queue.outgoing.append(
        Outgoing(
          destination: destination, path: path, interface: interface, method: method,
          arguments: arguments, reply: reply))
      return true
    }
    guard accepted else { return reply(.error("closed")) }
    poke()
  }

  /// Closes the connection (its thread ends; calls not sent get an error).
  func close() {
    queue.withLock { $0.closed = true }
    poke()
  }

  private func poke() {
    var byte: UInt8 = 1
    _ = write(wake.write, &byte, 1)
  }

  // MARK: The bus thread

  private func run() {
    var fd: Int32 = -1
    dbus_connection_get_unix_fd(connection, &fd)
    var pending: [UInt32: @Sendable (Reply) -> Void] = [:]
    while true {
      let (outgoing, closed) = queue.withLock { queue in
        defer { queue.outgoing = [] }
        return (queue.outgoing, queue.closed)
      }
      if closed { break }
      for message in outgoing {
        if let serial = send(message) {
          pending[serial] = message.reply
        } else {
          message.reply(.error("not sent"))
        }
      }
      if !outgoing.isEmpty { dbus_connection_flush(connection) }
      // What libdbus has read already (with the register's answer, say) is handled before the
      // socket is waited on.
      guard dbus_connection_read_write(connection, 0) != 0 else { break }
      while let message = dbus_connection_pop_message(connection) {
        handle(message, pending: &pending)
        dbus_message_unref(message)
      }
      var descriptors = [
        pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
        pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0),
      ]
      let ready = poll(&descriptors, 2, -1)
      if ready < 0 && errno != EINTR { break }
      if descriptors[1].revents != 0 {
        var drain = [UInt8](repeating: 0, count: 64)
        while read(wake.read, &drain, drain.count) > 0 {}
      }
      if descriptors[0].revents & Int16(POLLHUP | POLLERR) != 0 { break }
    }
    for reply in pending.values { reply(.error("closed")) }
    let left = queue.withLock { queue in
      queue.closed = true
      defer { queue.outgoing = [] }
      return queue.outgoing
    }
    for message in left { message.reply(.error("closed")) }
    signalsContinuation.finish()
    dbus_connection_close(connection)
    dbus_connection_unref(connection)
    Glibc.close(wake.read)
    Glibc.close(wake.write)
  }

  /// Sends `message`; its serial, nil when it could not be made.
  private func send(_ message: Outgoing) -> UInt32? {
    guard
      let call = dbus_message_new_method_call(
        message.destination, message.path, message.interface, message.method)
    else { return nil }
    defer { dbus_message_unref(call) }
    var iterator = DBusMessageIter()
    dbus_message_iter_init_append(call, &iterator)
    for argument in message.arguments { Self.append(argument, to: &iterator) }
    var serial: UInt32 = 0
    guard dbus_connection_send(connection, call, &serial) != 0 else { return nil }
    return serial
  }

  private func handle(
    _ message: OpaquePointer, pending: inout [UInt32: @Sendable (Reply) -> Void]
  ) {
    switch dbus_message_get_type(message) {
    case DBUS_MESSAGE_TYPE_METHOD_RETURN:
      let serial = dbus_message_get_reply_serial(message)
      pending.removeValue(forKey: serial)?(.values(Self.values(of: message)))
    case DBUS_MESSAGE_TYPE_ERROR:
      let serial = dbus_message_get_reply_serial(message)
      let name = dbus_message_get_error_name(message).map { String(cString: $0) } ?? "error"
      pending.removeValue(forKey: serial)?(.error(name))
    case DBUS_MESSAGE_TYPE_SIGNAL:
      guard let interface = dbus_message_get_interface(message),
        let member = dbus_message_get_member(message),
        let sender = dbus_message_get_sender(message),
        let path = dbus_message_get_path(message)
      else { return }
      signalsContinuation.yield(
        Signal(
          sender: String(cString: sender), path: String(cString: path),
          interface: String(cString: interface), member: String(cString: member),
          values: Self.values(of: message)))
    default:
      break
    }
  }
}
