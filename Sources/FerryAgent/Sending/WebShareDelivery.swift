import Ferry
import FerryLocalSend
import Foundation

/// A batch shared with browsers on a page at a link with an unguessable token (LocalSend's
/// "share via link" endpoints, plain HTTP): each browser is let in by the ``SendDecider``
/// before it downloads anything. Ends when the link expires — downloads under way finish
/// first — or, `once`, when one browser has every file.
public struct WebShareDelivery: Sendable {
  /// What a web share reports as it goes.
  public enum Event: Sendable {
    /// The page is served at `urls` (one per address of this machine, IPv4 first) until
    /// `expires`; `files` files of `bytes` bytes are offered.
    case serving(
      urls: [String], port: UInt16, expires: ContinuousClock.Instant, files: Int,
      bytes: UInt64)
    /// A browser at `address` was let in.
    case allowed(address: String)
    /// A browser at `address` was turned away (`userAgent`: what it says it is).
    case declined(address: String, userAgent: String?)
    /// A browser at `address` downloaded `path` whole (`bytes` bytes).
    case downloaded(path: String, bytes: UInt64, address: String)
    /// A download of `path` to `address` broke off.
    case downloadFailed(path: String, reason: String, address: String)
    /// The browser at `address` has every file (`once`).
    case everything(address: String)
    /// The link expired; `underWay` downloads are let end.
    case expired(underWay: Int)
  }

  let files: SendFiles
  let alias: String
  let port: UInt16
  let lifetime: Duration
  let once: Bool
  let decider: any SendDecider
  let events: @Sendable (Event) -> Void

  /// A share of `files` as `alias` on `port` (0: any) for `lifetime`, ending early when `once`
  /// one browser has every file; browsers are let in by `decider`; what happens goes to
  /// `events`.
  public init(
    files: SendFiles, alias: String, port: UInt16, lifetime: Duration, once: Bool,
    decider: any SendDecider, events: @escaping @Sendable (Event) -> Void
  ) {
    (self.files, self.alias, self.port, self.lifetime, self.once) = (
      files, alias, port, lifetime, once
    )
    (self.decider, self.events) = (decider, events)
  }

  /// Why a web share could not run, or ended with nothing downloaded.
  public enum Failure: Error, Sendable {
    /// The port could not be served (its words).
    case cannotListen(String)
    /// The link expired, and no browser downloaded a file whole.
    case nothingDownloaded
  }

  /// Serves the files until the link expires (or `once` is done); cancelling the task stops
  /// it at once.
  ///
  /// - Throws: ``Failure``.
  public func run() async throws(Failure) {
    let shared = files.items.map { item in
      // The file itself (a path given through a link is served from where it leads: the
      // server opens files without following links, so that none put in later is followed).
      let url = item.url.resolvingSymlinksInPath()
      var info = stat()
      let known = stat(url.path, &info) == 0
      return WebShareServer.SharedFile(
        url: url, path: item.path, size: item.size,
        identity: known ? (UInt64(info.st_dev), UInt64(info.st_ino)) : nil)
    }
    let access = LocalSendWebAccess(token: LocalSendWebAccess.newToken(), expires: .now + lifetime)
    let server = WebShareServer(access: access, alias: alias, files: shared)
    do {
      try await server.start(port: port)
    } catch {
      throw .cannotListen(ErrorWords.describe(error))
    }
    defer { server.stop() }
    let urls = LocalSendWebAccess.addresses().map {
      "http://\($0):\(server.port)\(access.pagePath)"
    }
    events(
      .serving(
        urls: urls, port: server.port, expires: access.expires, files: shared.count,
        bytes: shared.reduce(0) { $0 + $1.size }))
    let asking = Task { [decider, events] in
      await withDiscardingTaskGroup { group in
        for await request in server.requests {
          group.addTask {
            let deadline = ContinuousClock.now + ResourceOffer.decisionTimeout - .seconds(5)
            if await decider.admit(request, until: deadline), request.isPending {
              request.allow()
            } else {
              request.deny()
              events(
                .declined(
                  address: request.address,
                  userAgent: request.userAgent.map { String($0.prefix(200)) }
                ))
            }
          }
        }
      }
    }
    defer { asking.cancel() }
    let complete = await withTaskCancellationHandler {
      await follow(server, files: shared.count, until: access.expires)
    } onCancel: {
      server.stop()
      server.finishEvents()
    }
    if complete == 0 { throw .nothingDownloaded }
  }

  /// Reports downloads until the link expires, or one browser has everything (`once`); how
  /// many files were downloaded whole.
  private func follow(_ server: WebShareServer, files: Int, until end: ContinuousClock.Instant)
    async -> Int
  {
    let (once, events) = (self.once, self.events)
    return await withTaskGroup(of: Int?.self) { group in
      group.addTask {
        var complete = 0
        var got: [String: Set<String>] = [:]
        for await event in server.events {
          switch event {
          case .allowed(let address):
            events(.allowed(address: address))
          case .downloaded(let path, let bytes, let address):
            complete += 1
            events(.downloaded(path: path, bytes: bytes, address: address))
            got[address, default: []].insert(path)
            if once, got[address]?.count == files {
              events(.everything(address: address))
              return complete
            }
          case .failed(let path, let reason, let address):
            events(.downloadFailed(path: path, reason: reason, address: address))
          }
        }
        return complete
      }
      group.addTask {
        try? await Task.sleep(until: end)
        return nil
      }
      var result = 0
      for await value in group {
        if let value {
          result = value
          break
        }
        // Expired: no new browser; downloads under way go on to their end, then what was
        // done is the outcome.
        server.stop()
        events(.expired(underWay: server.downloadsUnderWay))
        await server.waitUntilNoDownloads()
        server.finishEvents()
      }
      group.cancelAll()
      return result
    }
  }
}
