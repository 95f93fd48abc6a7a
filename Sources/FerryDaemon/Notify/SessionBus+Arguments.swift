import CDBus

extension SessionBus {
  /// D-Bus type codes (`DBUS_TYPE_…` are character casts C macros Swift does not import).
  private enum Code {
    static let string = Int32(UInt8(ascii: "s"))
    static let uint32 = Int32(UInt8(ascii: "u"))
    static let int32 = Int32(UInt8(ascii: "i"))
    static let boolean = Int32(UInt8(ascii: "b"))
    static let byte = Int32(UInt8(ascii: "y"))
    static let array = Int32(UInt8(ascii: "a"))
    static let variant = Int32(UInt8(ascii: "v"))
    static let dictEntry = Int32(UInt8(ascii: "e"))
  }

  /// Appends `value` to a message being built.
  static func append(_ value: Value, to iterator: inout DBusMessageIter) {
    switch value {
    case .string(let text):
      appendString(text, to: &iterator)
    case .uint32(var number):
      dbus_message_iter_append_basic(&iterator, Code.uint32, &number)
    case .int32(var number):
      dbus_message_iter_append_basic(&iterator, Code.int32, &number)
    case .strings(let texts):
      var array = DBusMessageIter()
      dbus_message_iter_open_container(&iterator, Code.array, "s", &array)
      for text in texts { appendString(text, to: &array) }
      dbus_message_iter_close_container(&iterator, &array)
    case .hints(let hints):
      var array = DBusMessageIter()
      dbus_message_iter_open_container(&iterator, Code.array, "{sv}", &array)
      for (key, hint) in hints {
        var entry = DBusMessageIter()
        dbus_message_iter_open_container(&array, Code.dictEntry, nil, &entry)
        appendString(key, to: &entry)
        var variant = DBusMessageIter()
        switch hint {
        case .bool(let flag):
          dbus_message_iter_open_container(&entry, Code.variant, "b", &variant)
          var value = dbus_bool_t(flag ? 1 : 0)
          dbus_message_iter_append_basic(&variant, Code.boolean, &value)
        case .byte(var byte):
          dbus_message_iter_open_container(&entry, Code.variant, "y", &variant)
          dbus_message_iter_append_basic(&variant, Code.byte, &byte)
        }
        dbus_message_iter_close_container(&entry, &variant)
        dbus_message_iter_close_container(&array, &entry)
      }
      dbus_message_iter_close_container(&iterator, &array)
    }
  }

  /// Appends a string (valid UTF-8, as D-Bus requires: Swift's strings are).
  private static func appendString(_ text: String, to iterator: inout DBusMessageIter) {
    text.withCString { pointer in
      var pointer: UnsafePointer<CChar>? = pointer
      _ = dbus_message_iter_append_basic(&iterator, Code.string, &pointer)
    }
  }

  /// The arguments of a received message that the calls here read: strings, unsigned integers
  /// and arrays of strings (anything else is `.other`).
  static func values(of message: OpaquePointer) -> [Reply.Value] {
    var iterator = DBusMessageIter()
    guard dbus_message_iter_init(message, &iterator) != 0 else { return [] }
    var values: [Reply.Value] = []
    repeat {
      values.append(value(at: &iterator))
    } while dbus_message_iter_next(&iterator) != 0
    return values
  }

  private static func value(at iterator: inout DBusMessageIter) -> Reply.Value {
    switch dbus_message_iter_get_arg_type(&iterator) {
    case Code.string:
      var pointer: UnsafePointer<CChar>?
      dbus_message_iter_get_basic(&iterator, &pointer)
      return .string(pointer.map { String(cString: $0) } ?? "")
    case Code.uint32:
      var number: UInt32 = 0
      dbus_message_iter_get_basic(&iterator, &number)
      return .uint32(number)
    case Code.array:
      var element = DBusMessageIter()
      dbus_message_iter_recurse(&iterator, &element)
      var texts: [String] = []
      while dbus_message_iter_get_arg_type(&element) == Code.string {
        var pointer: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(&element, &pointer)
        texts.append(pointer.map { String(cString: $0) } ?? "")
        if dbus_message_iter_next(&element) == 0 { break }
      }
      return .strings(texts)
    default:
      return .other
    }
  }
}
