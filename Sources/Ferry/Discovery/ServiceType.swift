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
