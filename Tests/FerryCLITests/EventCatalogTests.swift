import Foundation
import Testing

@testable import FerryCLI

/// docs/CLI.md lists exactly the events, fields and error codes the CLI declares in ``Event``
/// and ``ErrorCode``: a new event, field or code without its line in the docs fails here.
@Suite("The NDJSON catalogue in docs/CLI.md")
struct EventCatalogTests {
  static let document: String = {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    return (try? String(contentsOf: root.appending(path: "docs/CLI.md"), encoding: .utf8)) ?? ""
  }()

  /// The words in backquotes in `text`, but options (`--once`).
  static func quoted(_ text: Substring) -> [String] {
    text.split(separator: "`", omittingEmptySubsequences: false).enumerated()
      .filter { $0.offset % 2 == 1 && !$0.element.hasPrefix("-") }.map { String($0.element) }
  }

  /// The event table's rows: the events a row names, and the words quoted in its fields column.
  static var rows: [(events: [String], fields: Set<String>)] {
    document.split(separator: "\n")
      .filter { $0.hasPrefix("| `") }
      .map { line in
        let columns = line.split(separator: "|", omittingEmptySubsequences: false)
        return (quoted(columns[1]), Set(quoted(columns[3])))
      }
  }

  @Test("the table has one row for each event, and no other")
  func events() {
    let documented = Self.rows.flatMap(\.events)
    #expect(documented.count == Set(documented).count, "an event listed twice")
    #expect(Set(documented) == Set(Event.allCases.map(\.rawValue)))
  }

  @Test("each row lists exactly the fields its events declare")
  func fields() throws {
    let values = Set(ErrorCode.allCases.map(\.rawValue)).union(["true"])
    for row in Self.rows {
      let events = row.events.compactMap(Event.init(rawValue:))
      let declared = Set(events.flatMap(\.fields))
      let nested = events.contains(.peerFound) ? Set(Event.addressFields) : []
      #expect(
        declared.isSubset(of: row.fields), "\(row.events) lacks \(declared.subtracting(row.fields))"
      )
      let extra = row.fields.subtracting(declared).subtracting(nested).subtracting(values)
      #expect(extra.isEmpty, "\(row.events) documents undeclared \(extra)")
    }
  }

  @Test("the error codes paragraph lists exactly the declared codes")
  func codes() throws {
    let start = try #require(Self.document.range(of: "Error codes:"))
    let end = try #require(Self.document.range(of: "One example of each:"))
    let documented = Set(Self.quoted(Self.document[start.upperBound..<end.lowerBound]))
    #expect(documented == Set(ErrorCode.allCases.map(\.rawValue)))
  }

  @Test("there is an example of every event, with only declared fields")
  func examples() throws {
    var seen: Set<String> = []
    for line in Self.document.split(separator: "\n") where line.hasPrefix("{\"event\":") {
      let object = try #require(
        try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
      let name = try #require(object["event"] as? String)
      let event = try #require(Event(rawValue: name), "example of unknown event \(name)")
      let keys = Set(object.keys).subtracting(["event", "timestamp"])
      #expect(keys.isSubset(of: Set(event.fields)), "\(name): \(keys.subtracting(event.fields))")
      seen.insert(name)
    }
    #expect(seen == Set(Event.allCases.map(\.rawValue)))
  }
}
