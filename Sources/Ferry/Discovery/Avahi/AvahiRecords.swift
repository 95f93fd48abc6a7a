import CAvahi

#if canImport(Glibc)
  import Glibc
#endif

// What Avahi hands a browser, read into Swift values: interface names, addresses, TXT records
// and C strings (for ``AvahiServiceBrowser``, on the poll thread).

/// The name of interface `index` ("dns" for a wide-area answer, `ifN` for one gone).
func interfaceName(_ index: AvahiIfIndex) -> String {
  var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
  // A wide-area (unicast DNS) answer comes on no interface.
  if index < 0 { return "dns" }
  guard index > 0, if_indextoname(UInt32(index), &buffer) != nil else { return "if\(index)" }
  return decodeCString(buffer)
}

/// An address Avahi resolved, seen on `interface` (a link-local IPv6 one with its zone).
func discoveredAddress(
  _ address: UnsafePointer<AvahiAddress>, interface: AvahiIfIndex
) -> DiscoveredAddress? {
  var buffer = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
  guard avahi_address_snprint(&buffer, buffer.count, address) != nil else { return nil }
  let text = decodeCString(buffer)
  let ifName = interfaceName(interface)
  if address.pointee.proto == AvahiProtocol(AVAHI_PROTO_INET6) {
    let isLinkLocal = text.lowercased().hasPrefix("fe80:")
    return DiscoveredAddress(
      family: .ipv6, ip: isLinkLocal ? "\(text)%\(ifName)" : text, interface: ifName)
  }
  return DiscoveredAddress(family: .ipv4, ip: text, interface: ifName)
}

/// A TXT record's strings, as bytes.
func txtEntries(_ list: UnsafeMutablePointer<AvahiStringList>?) -> [[UInt8]] {
  var entries: [[UInt8]] = []
  var node = list
  while let current = node {
    let size = Int(avahi_string_list_get_size(current))
    if let text = avahi_string_list_get_text(current) {
      entries.append(Array(UnsafeBufferPointer(start: text, count: size)))
    }
    node = avahi_string_list_get_next(current)
  }
  // Avahi keeps the list in reverse order of addition.
  return entries.reversed()
}

/// The text before the first NUL of a C buffer.
func decodeCString(_ buffer: [CChar]) -> String {
  String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Calls `body` with `text` as a C string, or with nil.
func withOptionalCString<Result>(
  _ text: String?, _ body: (UnsafePointer<CChar>?) -> Result
) -> Result {
  guard let text else { return body(nil) }
  return text.withCString { body($0) }
}
