import Crypto
import NIOCore
import Synchronization

/// One connection's TLS 1.3 exporter (RFC 8446 §7.5), the source of the verification code's
/// keying material (docs/PROTOCOL.md §6).
///
/// swift-nio-ssl has no exporter API. Each connection's TLS context therefore sends its key log
/// (BoringSSL's keylog callback, called on the channel's event loop while the handshake derives
/// its secrets, before the handshake completes) to ``record(keyLogLine:)``, which keeps the
/// `EXPORTER_SECRET` and drops every other line (the context is lent from a
/// ``TLSContextPool``, and given back by ``release()``); ``keyingMaterial(label:length:)`` derives from
/// it exactly what `SSL_export_keying_material` would, then forgets the secret.
final class TLSExporter: Sendable {
  private let secret = Mutex<[UInt8]?>(nil)
  /// What gives the connection's TLS context back (``TLSContextPool``), once.
  private let giveBack = Mutex<(@Sendable () -> Void)?>(nil)

  /// Sets what ``release()`` does (the context pool's return of the lent context).
  func onRelease(_ action: @escaping @Sendable () -> Void) {
    giveBack.withLock { $0 = action }
  }

  /// The connection needs no more key log lines (its handshake completed, or it closed): the
  /// context lent to it goes back. Once; any thread.
  func release() {
    giveBack.withLock { action -> (@Sendable () -> Void)? in
      defer { action = nil }
      return action
    }?()
  }

  /// Reads one key log line, `LABEL <client random, hex> <secret, hex>` and a newline: only the
  /// `EXPORTER_SECRET` line is kept. Any thread.
  func record(keyLogLine line: ByteBuffer) {
    let fields = line.readableBytesView.split(separator: UInt8(ascii: " "))
    guard fields.count == 3, fields[0].elementsEqual("EXPORTER_SECRET".utf8) else { return }
    var hex = Array(fields[2])
    while let last = hex.last, last == UInt8(ascii: "\n") || last == 0 { hex.removeLast() }
    guard let bytes = Self.bytes(hex: hex) else { return }
    secret.withLock { $0 = bytes }
  }

  /// The exporter's value for `label` with an empty context, `length` bytes long; the secret is
  /// forgotten. Nil when the handshake logged no exporter secret, or one of a length that no
  /// TLS 1.3 cipher suite's hash has.
  func keyingMaterial(label: String, length: Int) -> [UInt8]? {
    let taken = secret.withLock { secret -> [UInt8]? in
      defer { secret = nil }
      return secret
    }
    // The handshake is over: nothing more is logged for this connection.
    release()
    guard let taken else { return nil }
    switch taken.count {
    case SHA256.Digest.byteCount:
      return Self.export(SHA256.self, secret: taken, label: label, length: length)
    case SHA384.Digest.byteCount:
      return Self.export(SHA384.self, secret: taken, label: label, length: length)
    default:
      return nil
    }
  }

  /// TLS-Exporter(label, "", length) = HKDF-Expand-Label(Derive-Secret(secret, label, ""),
  /// "exporter", Hash(""), length), with the cipher suite's hash `H` (RFC 8446 §7.1, §7.5).
  static func export<H: HashFunction>(
    _ hash: H.Type, secret: [UInt8], label: String, length: Int
  ) -> [UInt8] {
    let emptyHash = Array(H.hash(data: [UInt8]()))
    let derived = expandLabel(
      H.self, secret: secret, label: label, context: emptyHash, length: H.Digest.byteCount)
    return expandLabel(
      H.self, secret: derived, label: "exporter", context: emptyHash, length: length)
  }

  /// HKDF-Expand-Label(secret, label, context, length) of RFC 8446 §7.1.
  static func expandLabel<H: HashFunction>(
    _ hash: H.Type, secret: [UInt8], label: String, context: [UInt8], length: Int
  ) -> [UInt8] {
    let fullLabel = Array("tls13 \(label)".utf8)
    var info: [UInt8] = [UInt8(length >> 8), UInt8(length & 0xFF), UInt8(fullLabel.count)]
    info += fullLabel
    info.append(UInt8(context.count))
    info += context
    return HKDF<H>.expand(pseudoRandomKey: secret, info: info, outputByteCount: length)
      .withUnsafeBytes { Array($0) }
  }

  /// Hexadecimal digits (either case) as bytes; nil for an odd count or another character.
  private static func bytes(hex: [UInt8]) -> [UInt8]? {
    guard hex.count % 2 == 0 else { return nil }
    func value(_ digit: UInt8) -> UInt8? {
      switch digit {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): return digit - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): return digit - UInt8(ascii: "a") + 10
      case UInt8(ascii: "A")...UInt8(ascii: "F"): return digit - UInt8(ascii: "A") + 10
      default: return nil
      }
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(hex.count / 2)
    var index = 0
    while index < hex.count {
      guard let high = value(hex[index]), let low = value(hex[index + 1]) else { return nil }
      bytes.append(high << 4 | low)
      index += 2
    }
    return bytes
  }
}
