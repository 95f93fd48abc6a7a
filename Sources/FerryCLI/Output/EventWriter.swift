import Ferry
import Foundation

/// Writes what a command has to say: NDJSON events on stdout with `--json`, human lines
/// otherwise. Human messages never reach stdout in JSON mode; errors always go to stderr too.
struct EventWriter: Sendable {
  /// Whether `--json` was given.
  let json: Bool
  /// Whether `--quiet` was given: human lines are dropped (errors are still printed).
  var quiet = false
  /// Whether stdout carries data (`receive --stdout`): events and lines go to stderr.
  var dataOnStandardOutput = false

  /// Emits one JSON event: `{"event":NAME,"timestamp":ISO-8601,...fields}` (JSON mode only).
  /// `fields` are among those ``Event/fields`` declares for `event`.
  func event(_ event: Event, _ fields: [(String, JSONValue)] = []) {
    assert(
      fields.allSatisfy { event.fields.contains($0.0) },
      "\(event.rawValue) does not declare \(fields.map(\.0))")
    guard json else { return }
    let object = JSONValue.object(
      [("event", .string(event.rawValue)), ("timestamp", .string(Self.timestamp()))] + fields)
    (dataOnStandardOutput ? StandardStream.error : .output).write(object.serialized + "\n")
  }

  /// A line for people: stdout normally, stderr in JSON mode so that stdout stays NDJSON. Any
  /// character a terminal would act on is shown escaped (text from peers is quoted in it).
  func say(_ line: String) {
    guard !quiet else { return }
    (json || dataOnStandardOutput ? StandardStream.error : .output)
      .write(DisplayText.terminalSafe(line) + "\n")
  }

  /// A status line for people that is never part of the command's data: always stderr,
  /// escaped as ``say(_:)``.
  func note(_ line: String) {
    guard !quiet else { return }
    StandardStream.error.write(DisplayText.terminalSafe(line) + "\n")
  }

  /// Reports a transfer's progress: `bar`'s row for `peer`, and a `progress` event.
  func progress(_ snapshot: ProgressSnapshot, peer: String, bar: ProgressBar) {
    bar.update(peer, snapshot)
    event(
      .progress,
      [
        ("peer", .string(peer)), ("bytes", .int(Int(snapshot.bytes))),
        // Not known while a streamed file (standard input) is still open.
        ("total", snapshot.totalIsKnown ? .int(Int(snapshot.total)) : .null),
        ("bytes_per_second", .int(wholeNumber(snapshot.bytesPerSecond))),
        ("files_done", .int(snapshot.filesDone)), ("files", .int(snapshot.fileCount)),
      ])
  }

  /// Reports a failure: an `error` event in JSON mode, and `ferry: error: …` on stderr always.
  func failure(_ failure: CLIFailure) {
    event(
      .error,
      [
        ("code", .string(failure.code.rawValue)), ("exit", .int(Int(failure.status.rawValue))),
        ("message", .string(failure.message)),
      ])
    StandardStream.error.write(
      "ferry: \(TerminalStyle.alert("error:")) \(DisplayText.terminalSafe(failure.message))\n")
  }

  /// ISO 8601 UTC with milliseconds, e.g. `2026-11-21T12:00:00.123Z`.
  static func timestamp(_ date: Date = Date()) -> String {
    date.formatted(
      Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
  }
}

/// `value` rounded down to an `Int`, 0 when it is not a finite number, clamped to `Int`'s range:
/// a rate or a time computed from a peer's pace must never trap.
func wholeNumber(_ value: Double) -> Int {
  guard value.isFinite else { return 0 }
  if value >= Double(Int.max) { return Int.max }
  if value <= Double(Int.min) { return Int.min }
  return Int(value)
}
