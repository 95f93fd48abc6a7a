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
