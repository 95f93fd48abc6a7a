import Ferry
import FerryLocalSend
import Foundation
import Synchronization

/// `ferry send --web PATH…`: the files on a page a browser downloads them from (LocalSend's
/// "share via link" endpoints), at a link with an unguessable token, printed with a QR code.
/// Each browser is asked about on the terminal (or let in by `--yes`). Ends when the link
/// expires, on Ctrl-C, or — with `--once` — when one browser has downloaded every file.
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
    let (items, _, _) = try LocalSendSending.files(of: batch, output: output)
    guard !items.isEmpty else {
      throw CLIFailure(
        status: .usage, message: "nothing to offer: --web serves files, and these paths hold none",
        code: .usage)
    }
    let files = items.map { item in
      // The file itself (a path given through a link is served from where it leads: the
      // server opens files without following links, so that none put in later is followed).
      let url = item.url.resolvingSymlinksInPath()
      var info = stat()
      let known = stat(url.path, &info) == 0
      return WebShareServer.SharedFile(
        url: url, path: item.path, size: item.size,
        identity: known ? (UInt64(info.st_dev), UInt64(info.st_ino)) : nil)
    }
    let access = LocalSendWebAccess(
      token: LocalSendWebAccess.newToken(),
      expires: .now + .milliseconds(Int64(options.minutes * 60_000)))
    let server = WebShareServer(access: access, alias: name, files: files)
    do {
      try await server.start(port: options.port)
    } catch {
      throw CLIFailure(
        status: .usage,
        message: "cannot serve the web page on port \(options.port): \(ErrorWords.describe(error))",
        code: .cannotListen)
    }
    defer { server.stop() }
    let urls = LocalSendWebAccess.addresses().map {
      "http://\($0):\(server.port)\(access.pagePath)"
    }
    output.emit(
      WebLink(
        urls: urls, port: Int(server.port),
        expires: EventWriter.timestamp(Date.now.addingTimeInterval(options.minutes * 60))))
    let total = files.reduce(UInt64(0)) { $0 + $1.size }
    output.note(
      "Offering \(Quantity.count(files.count, "file")), \(Quantity.bytes(total)), to browsers.")
    WebLinkBanner.show(urls, minutes: options.minutes, doing: "download them", output: output)
    Interrupts.onInterrupt(reportingTo: output) { server.stop() }
    let prompt = InvitationPrompt(
      output: output, bar: ProgressBar(enabled: false), turns: PromptTurns())
    let asking = Task { [options, output] in
      await withDiscardingTaskGroup { group in
        for await request in server.requests {
          group.addTask {
            await Self.decide(request, yes: options.yes, prompt: prompt, output: output)
          }
        }
      }
    }
    defer { asking.cancel() }
    let outcome = await follow(server, files: files, until: access.expires)
    if outcome.complete == 0 {
      throw CLIFailure(
        status: .noPeer,
        message: "the web link expired and no browser downloaded a file whole",
        code: .noPeer)
    }
  }

  /// Reports downloads until the link expires, or one browser has everything (`--once`).
  private func follow(
    _ server: WebShareServer, files: [WebShareServer.SharedFile],
    until end: ContinuousClock.Instant
  ) async -> (complete: Int, everything: Bool) {
    let once = options.once
    let output = self.output
    return await withTaskGroup(of: (Int, Bool)?.self) { group in
      group.addTask {
        var complete = 0
        var got: [String: Set<String>] = [:]
        for await event in server.events {
          switch event {
          case .allowed(let address):
            output.emit(
              WebDownload(
                address: address, userAgent: nil, status: "allowed", path: nil, bytes: nil,
                reason: nil))
          case .downloaded(let path, let bytes, let address):
            complete += 1
            output.emit(
              WebDownload(
                address: address, userAgent: nil, status: "sent", path: path, bytes: Int(bytes),
                reason: nil))
            output.note("Sent \(printable(path)) (\(Quantity.bytes(bytes))) to \(address).")
            got[address, default: []].insert(path)
            if once, got[address]?.count == files.count {
              output.note("\(address) has every file (--once).")
              return (complete, true)
            }
          case .failed(let path, let reason, let address):
            output.emit(
              WebDownload(
                address: address, userAgent: nil, status: "failed", path: path, bytes: nil,
                reason: reason))
            output.note("\(printable(path)) to \(address) broke off: \(printable(reason)).")
          }
        }
        return (complete, false)
      }
      group.addTask {
        try? await Task.sleep(until: end)
        return nil
      }
      var result = (0, false)
      for await value in group {
        if let value {
          result = value
          break
        }
        // Expired: no new browser; downloads under way go on to their end, then what was
        // done is the outcome.
        server.stop()
        let under = server.downloadsUnderWay
        output.note(
          "The web link expired"
            + (under > 0 ? "; letting \(Quantity.count(under, "download")) under way end." : "."))
        while server.downloadsUnderWay > 0 {
          try? await Task.sleep(for: .milliseconds(200))
        }
        server.finishEvents()
      }
      group.cancelAll()
      return result
    }
  }

  /// Lets `request`'s browser in, by `--yes` or by asking the person.
  private static func decide(
    _ request: WebShareServer.Request, yes: Bool, prompt: InvitationPrompt, output: EventWriter
  ) async {
    let agent = BrowserName.of(request.userAgent).map { printable($0) } ?? "no User-Agent"
    if yes {
      output.note("Letting in a browser at \(request.address) (\(agent)) (--yes).")
      return request.allow()
    }
    let lines = [
      "", "A browser at \(request.address) wants to download the files (web page)", "  \(agent)",
      "  plain HTTP: anyone on this network could read what it downloads",
    ]
    let answer = await prompt.question(
      lines, from: "browser at \(request.address)",
      until: .now + ResourceOffer.decisionTimeout - .seconds(5),
      isPending: { request.isPending })
    if answer == .yes {
      request.allow()
    } else {
      request.deny()
      output.emit(
        WebDownload(
          address: request.address, userAgent: request.userAgent.map { String($0.prefix(200)) },
          status: "declined", path: nil, bytes: nil, reason: nil))
    }
  }
}
