import Ferry
import Testing

@Suite("ServiceType: RFC 6335 §5.1")
struct ServiceTypeTests {
  @Test(
    "valid names are accepted and folded to lower case",
    arguments: [
      ("ferry", "ferry"),
      ("a", "a"),
      ("FERRY", "ferry"),
      ("my-app", "my-app"),
      ("a1b2c3", "a1b2c3"),
      ("123a", "123a"),
      ("a-b-c-d-e-f-g-h", "a-b-c-d-e-f-g-h"),
      ("abcdefghijklmno", "abcdefghijklmno"),  // 15 characters
      ("_ferry._tcp", "ferry"),
      ("_Ferry._TCP", "ferry"),
    ])
  func valid(input: String, name: String) throws {
    let type = try ServiceType(input)
    #expect(type.name == name)
    #expect(type.dnsSDType == "_\(name)._tcp")
  }

  @Test(
    "each broken rule has its own error",
    arguments: [
      ("", ServiceTypeError.empty),
      (
        "abcdefghijklmnop",  // 16 characters
        .tooLong(input: "abcdefghijklmnop", length: 16)
      ),
      ("1234", .noLetter(input: "1234")),
      ("0", .noLetter(input: "0")),
      ("-", .noLetter(input: "-")),
      ("-ferry", .leadingHyphen(input: "-ferry")),
      ("ferry-", .trailingHyphen(input: "ferry-")),
      ("fer--ry", .adjacentHyphens(input: "fer--ry")),
      ("my_app", .invalidCharacter(input: "my_app", character: "_", position: 3)),
      ("my app", .invalidCharacter(input: "my app", character: " ", position: 3)),
      (" ferry", .invalidCharacter(input: " ferry", character: " ", position: 1)),
      ("ferry\n", .invalidCharacter(input: "ferry\n", character: "\n", position: 6)),
      ("tab\there", .invalidCharacter(input: "tab\there", character: "\t", position: 4)),
      ("café", .invalidCharacter(input: "café", character: "é", position: 4)),
      ("日本", .invalidCharacter(input: "日本", character: "日", position: 1)),
      ("ferry.tcp", .invalidCharacter(input: "ferry.tcp", character: ".", position: 6)),
      ("_ferry._udp", .invalidCharacter(input: "_ferry._udp", character: "_", position: 1)),
    ])
  func invalid(input: String, expected: ServiceTypeError) {
    #expect(throws: expected) { try ServiceType(input) }
  }

  @Test("messages name the rule and show the input escaped")
  func messages() {
    func message(_ input: String) -> String {
      do {
        _ = try ServiceType(input)
        return ""
      } catch {
        return error.description
      }
    }
    #expect(message("").contains("1 to 15 characters"))
    #expect(message("abcdefghijklmnop").contains("16 characters"))
    #expect(message("abcdefghijklmnop").contains("at most 15"))
    #expect(message("42").contains("at least one letter"))
    #expect(message("-x").contains("hyphen at the start"))
    #expect(message("x-").contains("hyphen at the end"))
    #expect(message("a--b").contains("next to each other"))
    #expect(message("a\u{7}b") == message("a\u{7}b"))
    let control = message("bad\u{1B}[31m")
    #expect(control.contains("\\u{1B}"))
    #expect(!control.contains("\u{1B}"))
    #expect(message("café").contains("\\u{E9}"))
    #expect(message("café").contains("ASCII letters, digits and '-'"))
    #expect(message("x y").contains("RFC 6335"))
  }

  @Test("comparison is case-insensitive")
  func caseInsensitive() throws {
    #expect(try ServiceType("Ferry") == ServiceType("fErRy"))
    #expect(try ServiceType("ferry") == ServiceType.ferry)
    #expect(try ServiceType("ferry") != ServiceType("ferry2"))
  }
}
