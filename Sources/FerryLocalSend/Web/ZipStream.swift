import CFerrySystem

#if canImport(Glibc)
  import Glibc
#endif

/// A zip archive written as it goes, for files whose sizes are known and whose CRC-32 is
/// known only once each is read: every entry stored (no compression: photos and videos do not
/// shrink, and the browser gets bytes at the disk's pace), its CRC and sizes in a data
/// descriptor after it (general purpose bit 3), names in UTF-8 (bit 11), ZIP64 fields where a
/// size or an offset needs them (APPNOTE 6.3.x, 4.3.9 and 4.5.3). Pure: it makes the bytes and
/// counts the offsets; the caller writes them.
struct ZipStream {
  /// One entry, once written.
  private struct Entry {
    let name: [UInt8]
    let size: UInt64
    let crc: UInt32
    let offset: UInt64
    let time: (time: UInt16, date: UInt16)
    let mode: UInt32
    var zip64: Bool { size >= 0xFFFF_FFFF || offset >= 0xFFFF_FFFF }
  }

  private var entries: [Entry] = []
  /// Bytes made so far (the offset of the next record).
  private(set) var written: UInt64 = 0

  /// The local header of an entry named `path` (a `/`-separated relative path) of `size`
  /// bytes, modified at `seconds` since 1970, with permission bits `mode`; its bytes follow it.
  mutating func header(path: String, size: UInt64, modified seconds: Int64) -> [UInt8] {
    let zip64 = size >= 0xFFFF_FFFF || written >= 0xFFFF_FFFF
    var out: [UInt8] = []
    out.le32(0x0403_4B50)
    out.le16(zip64 ? 45 : 20)
    out.le16(0x0808)  // data descriptor, UTF-8 names
    out.le16(0)  // stored
    let time = Self.dos(seconds)
    out.le16(time.time)
    out.le16(time.date)
    out.le32(0)  // CRC: in the descriptor
    out.le32(zip64 ? 0xFFFF_FFFF : 0)
    out.le32(zip64 ? 0xFFFF_FFFF : 0)
    let name = Array(path.utf8)
    out.le16(UInt16(name.count))
    out.le16(zip64 ? 20 : 0)
    out += name
    if zip64 {
      out.le16(0x0001)
      out.le16(16)
      out.le64(0)
      out.le64(0)
    }
    pending = (name, size, written, time, zip64)
    written += UInt64(out.count)
    return out
  }

  /// The entry whose header was made last, until its descriptor is.
  private var pending:
    (name: [UInt8], size: UInt64, offset: UInt64, time: (UInt16, UInt16), zip64: Bool)?

  /// The data descriptor after the entry's `crc` (of all its bytes, now written).
  mutating func descriptor(crc: UInt32) -> [UInt8] {
    guard let entry = pending else { return [] }
    pending = nil
    written += entry.size
    var out: [UInt8] = []
    out.le32(0x0807_4B50)
    out.le32(crc)
    if entry.zip64 {
      out.le64(entry.size)
      out.le64(entry.size)
    } else {
      out.le32(UInt32(entry.size))
      out.le32(UInt32(entry.size))
    }
    entries.append(
      Entry(
        name: entry.name, size: entry.size, crc: crc, offset: entry.offset,
        time: (entry.time.0, entry.time.1), mode: 0o100644))
    written += UInt64(out.count)
    return out
  }

  /// The central directory and the end records: the archive's last bytes.
  mutating func end() -> [UInt8] {
    let start = written
    var out: [UInt8] = []
    for entry in entries {
      let zip64 = entry.zip64
      out.le32(0x0201_4B50)
      out.le16(3 << 8 | 45)  // made by Unix
      out.le16(zip64 ? 45 : 20)
      out.le16(0x0808)
      out.le16(0)
      out.le16(entry.time.time)
      out.le16(entry.time.date)
      out.le32(entry.crc)
      out.le32(zip64 ? 0xFFFF_FFFF : UInt32(entry.size))
      out.le32(zip64 ? 0xFFFF_FFFF : UInt32(entry.size))
      out.le16(UInt16(entry.name.count))
      out.le16(zip64 ? 28 : 0)
      out.le16(0)  // comment
      out.le16(0)  // disk
      out.le16(0)  // internal attributes
      out.le32(entry.mode << 16)
      out.le32(zip64 ? 0xFFFF_FFFF : UInt32(entry.offset))
      out += entry.name
      if zip64 {
        out.le16(0x0001)
        out.le16(24)
        out.le64(entry.size)
        out.le64(entry.size)
        out.le64(entry.offset)
      }
    }
    let size = UInt64(out.count)
    let needs64 = entries.count >= 0xFFFF || start >= 0xFFFF_FFFF || size >= 0xFFFF_FFFF
    if needs64 {
      let record = start + size
      out.le32(0x0606_4B50)
      out.le64(44)
      out.le16(3 << 8 | 45)
      out.le16(45)
      out.le32(0)
      out.le32(0)
      out.le64(UInt64(entries.count))
      out.le64(UInt64(entries.count))
      out.le64(size)
      out.le64(start)
      out.le32(0x0706_4B50)
      out.le32(0)
      out.le64(record)
      out.le32(1)
    }
    out.le32(0x0605_4B50)
    out.le16(0)
    out.le16(0)
    out.le16(needs64 ? 0xFFFF : UInt16(entries.count))
    out.le16(needs64 ? 0xFFFF : UInt16(entries.count))
    out.le32(needs64 ? 0xFFFF_FFFF : UInt32(size))
    out.le32(needs64 ? 0xFFFF_FFFF : UInt32(start))
    out.le16(0)
    written += UInt64(out.count)
    return out
  }

  /// The CRC-32 of `bytes`, continuing from `crc` (0 to start).
  static func crc32(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
    ferry_crc32(crc, bytes.baseAddress, bytes.count)
  }

  /// `seconds` since 1970 as MS-DOS time and date (local time, 2-second steps); 1980-01-01
  /// for anything before it (DOS dates begin there).
  static func dos(_ seconds: Int64) -> (time: UInt16, date: UInt16) {
    var value = time_t(max(seconds, 315_532_800))
    var parts = tm()
    guard localtime_r(&value, &parts) != nil else { return (0, 0x21) }
    let year: Int = max(0, min(127, Int(parts.tm_year) - 80))
    let month = Int(parts.tm_mon) + 1
    let day = Int(parts.tm_mday)
    let date = UInt16((year << 9) | (month << 5) | day)
    let hour = Int(parts.tm_hour)
    let minute = Int(parts.tm_min)
    let second = Int(parts.tm_sec) / 2
    let time = UInt16((hour << 11) | (minute << 5) | second)
    return (time, date)
  }
}

extension [UInt8] {
  fileprivate mutating func le16(_ value: UInt16) {
    append(UInt8(value & 0xFF))
    append(UInt8(value >> 8))
  }

  fileprivate mutating func le32(_ value: UInt32) {
    for shift in stride(from: 0, to: 32, by: 8) { append(UInt8((value >> UInt32(shift)) & 0xFF)) }
  }

  fileprivate mutating func le64(_ value: UInt64) {
    for shift in stride(from: 0, to: 64, by: 8) { append(UInt8((value >> UInt64(shift)) & 0xFF)) }
  }
}
