/// A DNS-SD service type, validated by the rules of RFC 6335 §5.1.
///
/// A service name is 1–15 characters long, uses only the ASCII letters, the digits and the hyphen,
/// holds at least one letter, and has no hyphen at either end or next to another hyphen. Names are
/// compared case-insensitively and published in lower case as `_<name>._tcp`.
///
/// ```swift
/// let type = try ServiceType("ferry")
/// print(type.dnsSDType)  // "_ferry._tcp"
/// ```
public struct ServiceType: Hashable, Sendable, CustomStringConvertible {
  /// The service type every Ferry peer uses unless told otherwise: `_ferry._tcp`.
  public static let ferry = ServiceType(uncheckedName: "ferry")

  /// The longest service name RFC 6335 allows, in characters.
  public static let maximumLength = 15

  /// The validated service name, in lower case, without the leading underscore (e.g. `ferry`).
  public let name: String

  /// The DNS-SD form published through mDNS, e.g. `_ferry._tcp`.
  public var dnsSDType: String { "_\(name)._tcp" }

  /// The DNS-SD form, e.g. `_ferry._tcp`.
  public var description: String { dnsSDType }

  /// Validates a service name.
  ///
  /// The input may be the bare name (`ferry`) or its DNS-SD form (`_ferry._tcp`); either way the
  /// name part is what RFC 6335 §5.1 checks. Letters are folded to lower case.
  ///
  /// - Parameter string: The service name to check.
  /// - Throws: ``ServiceTypeError`` naming the first rule the input breaks, in the order the
  ///   cases are declared.
  public init(_ string: String) throws(ServiceTypeError) {
    var candidate = Substring(string)
    if candidate.hasPrefix("_") && candidate.lowercased().hasSuffix("._tcp") {
      candidate = candidate.dropFirst().dropLast(5)
    }
    try Self.validate(candidate, input: string)
    self.name = candidate.lowercased()
  }

  private init(uncheckedName: String) {
    self.name = uncheckedName
  }

  private static func validate(_ name: Substring, input: String) throws(ServiceTypeError) {
    if name.isEmpty {
      throw .empty
    }
    for (offset, scalar) in name.unicodeScalars.enumerated() {
      let isLetter = ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
      let isDigit = ("0"..."9").contains(scalar)
      if !(isLetter || isDigit || scalar == "-") {
        throw .invalidCharacter(input: input, character: scalar, position: offset + 1)
      }
    }
    let length = name.unicodeScalars.count
    if length > maximumLength {
      throw .tooLong(input: input, length: length)
    }
    if !name.unicodeScalars.contains(where: { ("a"..."z").contains($0) || ("A"..."Z").contains($0) }
    ) {
      throw .noLetter(input: input)
    }
    if name.hasPrefix("-") {
      throw .leadingHyphen(input: input)
    }
    if name.hasSuffix("-") {
      throw .trailingHyphen(input: input)
    }
    if name.contains("--") {
      throw .adjacentHyphens(input: input)
    }
  }
}

/// Why a string is not a valid service type: each case is one rule of RFC 6335 §5.1.
public enum ServiceTypeError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The name is empty; it must have 1 to 15 characters.
  case empty
  /// The name holds a character other than an ASCII letter, digit or hyphen.
  /// `position` counts Unicode scalars from 1.
  case invalidCharacter(input: String, character: Unicode.Scalar, position: Int)
  /// The name is longer than 15 characters.
  case tooLong(input: String, length: Int)
  /// The name has no letter (digits and hyphens only).
  case noLetter(input: String)
  /// The name begins with a hyphen.
  case leadingHyphen(input: String)
  /// The name ends with a hyphen.
  case trailingHyphen(input: String)
  /// The name has two hyphens next to each other.
  case adjacentHyphens(input: String)

  /// A message naming the rule and the offending input, with non-ASCII and control characters
  /// escaped so that the message is always printable.
  public var description: String {
    let rule = "RFC 6335 §5.1"
    switch self {
    case .empty:
      return "invalid service type \"\": it is empty; \(rule) requires 1 to 15 characters"
    case .invalidCharacter(let input, let character, let position):
      return
        "invalid service type \"\(escaped(input))\": character \(position) "
        + "'\(escaped(String(character)))' is not allowed; \(rule) allows only ASCII letters, "
        + "digits and '-'"
    case .tooLong(let input, let length):
      return
        "invalid service type \"\(escaped(input))\": it has \(length) characters; \(rule) "
        + "allows at most \(ServiceType.maximumLength)"
    case .noLetter(let input):
      return
        "invalid service type \"\(escaped(input))\": it has no letter; \(rule) requires at "
        + "least one letter"
    case .leadingHyphen(let input):
      return
        "invalid service type \"\(escaped(input))\": it begins with '-'; \(rule) forbids a "
        + "hyphen at the start"
    case .trailingHyphen(let input):
      return
        "invalid service type \"\(escaped(input))\": it ends with '-'; \(rule) forbids a "
        + "hyphen at the end"
    case .adjacentHyphens(let input):
      return
        "invalid service type \"\(escaped(input))\": it has '--'; \(rule) forbids two "
        + "hyphens next to each other"
    }
  }
}
