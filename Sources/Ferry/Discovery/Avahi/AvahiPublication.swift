import CAvahi

/// Keeps one DNS-SD service registered through an ``AvahiConnection``: adds it when the daemon
/// runs, takes Avahi's alternative name on a collision, re-registers after the daemon restarts
/// or renames its host, and withdraws it on ``withdraw()``.
///
/// Poll-thread confined: every method runs in an Avahi callback or under the connection's lock
/// (see ``AvahiConnection``).
final class AvahiPublication: @unchecked Sendable {
  /// What the publication reports, on the poll thread.
  enum Event {
    /// The service is registered on the network under `name`.
    case established(name: String)
    /// `name` collided with another service; the publication now uses `newName`.
    case renamed(from: String, to: String)
    /// The daemon went away; the service will be published again when it returns.
    case daemonLost(reason: String)
    /// The daemon refused the service; it is not published.
    case failed(reason: String)
  }

  private(set) var name: String
  private let type: String
  private let port: UInt16
  private let txt: [[UInt8]]
  private let report: (Event) -> Void
  private var group: OpaquePointer?
  private var client: OpaquePointer?
  private var withdrawn = false

  init(name: String, type: String, port: UInt16, txt: [[UInt8]], report: @escaping (Event) -> Void)
  {
    self.name = name
    self.type = type
    self.port = port
    self.txt = txt
    self.report = report
  }

  /// Feeds a connection event to the publication.
  func handle(_ event: AvahiConnectionEvent) {
    guard !withdrawn else { return }
    switch event {
    case .running(let client):
      self.client = client
      if group == nil || avahi_entry_group_is_empty(group) != 0 {
        register()
      }
    case .registering:
      // The host name is being (re)registered: the service goes back in on the next `.running`.
      if let group {
        avahi_entry_group_reset(group)
      }
    case .disconnected(let reason):
      // The old client freed the group with itself.
      group = nil
      client = nil
      report(.daemonLost(reason: reason))
    }
  }

  /// Frees the entry group, which sends goodbye packets for the service (under the lock).
  func withdraw() {
    withdrawn = true
    if let group {
      avahi_entry_group_free(group)
      self.group = nil
    }
  }

  private func register() {
    guard let client else { return }
    if group == nil {
      group = avahi_entry_group_new(
        client, entryGroupCallback, Unmanaged.passUnretained(self).toOpaque())
    }
    guard let group else {
      report(.failed(reason: avahiErrorMessage(avahi_client_errno(client))))
      return
    }
    while true {
      let result = addService(to: group)
      if result == AVAHI_ERR_COLLISION {
        // A service of ours on this very daemon already has the name.
        rename()
        continue
      }
      if result < 0 {
        report(.failed(reason: avahiErrorMessage(result)))
        return
      }
      break
    }
    let committed = avahi_entry_group_commit(group)
    if committed < 0 {
      report(.failed(reason: avahiErrorMessage(committed)))
    }
  }

  private func addService(to group: OpaquePointer) -> Int32 {
    var list: UnsafeMutablePointer<AvahiStringList>? = nil
    for entry in txt.reversed() {
      list = entry.withUnsafeBufferPointer {
        avahi_string_list_add_arbitrary(list, $0.baseAddress, $0.count)
      }
    }
    defer { avahi_string_list_free(list) }
    return avahi_entry_group_add_service_strlst(
      group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_UNSPEC),
      AvahiPublishFlags(0), name, type, nil, nil, port, list)
  }

  private func rename() {
    let old = name
    if let alternative = avahi_alternative_service_name(name) {
      name = String(cString: alternative)
      avahi_free(alternative)
    } else {
      name += " #2"
    }
    report(.renamed(from: old, to: name))
  }

  fileprivate func groupStateChanged(_ changed: OpaquePointer, state: AvahiEntryGroupState) {
    guard !withdrawn, changed == group || group == nil else { return }
    switch state {
    case AVAHI_ENTRY_GROUP_ESTABLISHED:
      report(.established(name: name))
    case AVAHI_ENTRY_GROUP_COLLISION:
      // Another host on the network has the name: take the alternative and publish again.
      rename()
      avahi_entry_group_reset(changed)
      register()
    case AVAHI_ENTRY_GROUP_FAILURE:
      let reason = avahiErrorMessage(avahi_client_errno(avahi_entry_group_get_client(changed)))
      report(.failed(reason: reason))
    default:  // UNCOMMITED, REGISTERING
      break
    }
  }
}

private let entryGroupCallback: AvahiEntryGroupCallback = { group, state, userdata in
  guard let group, let userdata else { return }
  Unmanaged<AvahiPublication>.fromOpaque(userdata).takeUnretainedValue()
    .groupStateChanged(group, state: state)
}
