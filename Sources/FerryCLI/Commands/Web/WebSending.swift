import Ferry
import FerryAgent
import FerryLocalSend
import Foundation

/// `ferry send --web PATH…`: the files on a page a browser downloads them from
/// (``WebShareDelivery``), at a link with an unguessable token, printed with a QR code. Each
/// browser is asked about on the terminal (or let in by `--yes`). Ends when the link expires,
/// on Ctrl-C, or — with `--once` — when one browser has downloaded every file.
struct WebSending: Sendable {
  let options: WebSendOptions
  let name: String
  let output: EventWriter
  let canAsk: Bool

  /// Serves `batch` until the link expires (or `--once` is done).
  ///
  /// - Throws: ``CLIFailure``: exit 3 (`no-peer`) when the link expired and no file was
  ///   downloaded whole; exit 2 when there is nobody to ask and no `--yes`; the port taken.
  func run(batch: SendBatch) async throws(CLIFailure) {
    guard options.yes || canAsk else {
      throw CLIFailure(
        status: .usage,
        message: "no terminal to ask on about each browser: use --yes to let every browser "
          + "that opens the link download",
        code: .usage)
    }
    let files: SendFiles
    do {
      files = try SendFiles(batch)
    } catch {
      throw CLIFailure(error)
    }
    guard !files.items.isEmpty else {
      throw CLIFailure(
        status: .usage, message: "nothing to offer: --web serves files, and these paths hold none",
        code: .usage)
    }
    let bar = ProgressBar(enabled: false)
    let decider = TerminalSendDecider(
      output: output, bar: bar, interactive: canAsk, admitsEveryBrowser: options.yes)
    let share = WebShareDelivery(
      files: files, alias: name, port: options.port,
      lifetime: .milliseconds(Int64(options.minutes * 60_000)), once: options.once,
      decider: decider, events: { [output, options] in Self.report($0, output, options) })
    let sharing = Task { () async -> WebShareDelivery.Failure? in
      do throws(WebShareDelivery.Failure) {
        try await share.run()
        return nil
      } catch {
        return error
      }
    }
    Interrupts.onInterrupt(reportingTo: output) { sharing.cancel() }
    switch await sharing.value {
    case nil: return
    case .cannotListen(let why)?:
      throw CLIFailure(
        status: .usage, message: "cannot serve the web page on port \(options.port): \(why)",
        code: .cannotListen)
    case .nothingDownloaded?:
      throw CLIFailure(
        status: .noPeer,
        message: "the web link expired and no browser downloaded a file whole",
        code: .noPeer)
    }
  }

  /// Shows what the web share reports: the link and its banner, each browser and download.
  private static func report(
    _ event: WebShareDelivery.Event, _ output: EventWriter, _ options: WebSendOptions
  ) {
    switch event {
    case .serving(let urls, let port, let expires, let files, let bytes):
      output.emit(
        WebLink(
          urls: urls, port: Int(port),
          expires: EventWriter.timestamp(InvitationPrompt.date(of: expires))))
      output.note(
        "Offering \(Quantity.count(files, "file")), \(Quantity.bytes(bytes)), to browsers.")
      WebLinkBanner.show(urls, minutes: options.minutes, doing: "download them", output: output)
    case .allowed(let address):
      output.emit(
        WebDownload(
          address: address, userAgent: nil, status: "allowed", path: nil, bytes: nil,
          reason: nil))
    case .declined(let address, let userAgent):
      output.emit(
        WebDownload(
          address: address, userAgent: userAgent, status: "declined", path: nil, bytes: nil,
          reason: nil))
    case .downloaded(let path, let bytes, let address):
      output.emit(
        WebDownload(
          address: address, userAgent: nil, status: "sent", path: path, bytes: Int(bytes),
          reason: nil))
      output.note("Sent \(printable(path)) (\(Quantity.bytes(bytes))) to \(address).")
    case .downloadFailed(let path, let reason, let address):
      output.emit(
        WebDownload(
          address: address, userAgent: nil, status: "failed", path: path, bytes: nil,
          reason: reason))
      output.note("\(printable(path)) to \(address) broke off: \(printable(reason)).")
    case .everything(let address):
      output.note("\(address) has every file (--once).")
    case .expired(let underWay):
      output.note(
        "The web link expired"
          + (underWay > 0
            ? "; letting \(Quantity.count(underWay, "download")) under way end." : "."))
    }
  }
}
