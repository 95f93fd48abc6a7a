import Ferry
import FerryAgent
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
  /// Where each event also goes, as its JSON line without the newline, whether or not
  /// `--json` was given (`ferry daemon`'s event log, which its API streams).
  var sink: (@Sendable (String) -> Void)?

  /// Emits one JSON event: `{"event":NAME,"timestamp":ISO-8601,...fields}` (JSON mode only),
  /// `record`'s fields, as `event` (one of the record's ``EventRecord/events``; its first when
  /// nil).
  func emit<Record: EventRecord>(_ record: Record, as event: Event? = nil) {
    let event = event ?? Record.events[0]
    assert(Record.events.contains(event), "\(Record.self) is not \(event.rawValue)")
    guard json || sink != nil else { return }
    let object = JSONValue.object(
      [("event", .string(event.rawValue)), ("timestamp", .string(Self.timestamp()))]
        + record.fields)
    sink?(object.serialized)
    guard json else { return }
    // A progress line a stuck reader may lose: the next one says all it said.
    (dataOnStandardOutput ? StandardStream.error : .output)
      .write(object.serialized + "\n", droppable: event == .progress)
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
    emit(TransferProgressed(snapshot, peer: peer))
  }

  /// Reports a failure: an `error` event in JSON mode, and `ferry: error: …` on stderr always.
  func failure(_ failure: CLIFailure) {
    emit(Failure(code: failure.code, exit: failure.status, message: failure.message))
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
