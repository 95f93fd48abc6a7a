import Foundation
import NIOHTTP1

/// Every route Ferry's HTTP servers answer, once, in one table: the LocalSend receiver's API,
/// the web receive page's (the same uploads, for browsers), and the web share page's
/// downloads — with how each server lets a request in (``Access``). What a request that
/// matches no row gets is each server's affair (a 404).
enum HTTPRoutes {
  /// What a request asks for.
  enum Route: Sendable, Equatable {
    /// LocalSend: who this device is.
    case info
    /// LocalSend: a device announces itself.
    case register
    /// LocalSend (and the receive page): files, or a text, are offered.
    case prepareUpload
    /// LocalSend (and the receive page): one accepted file's body.
    case upload
    /// LocalSend (and the receive page): the sender ends its session.
    case cancel
    /// The share page: a browser asks for the files.
    case prepareDownload
    /// The share page: one file.
    case download
    /// The share page: every file as one zip.
    case downloadAll
    /// The share page: what its session downloaded whole.
    case downloaded
    /// A page under its link (`/r/TOKEN`).
    case page
    /// The page's script (`/r/TOKEN/app.js`).
    case script
    /// The page's style (`/r/TOKEN/app.css`).
    case style
    /// The style of the "expired or wrong link" page, which anyone may see.
    case expiredStyle
  }

  /// Which server answers.
  enum Server: Sendable, Hashable {
    /// `ferry receive --localsend`: LocalSend apps.
    case localSend
    /// `ferry receive --web`: browsers upload.
    case webReceive
    /// `ferry send --web`: browsers download.
    case webShare
  }

  /// How a server lets a request for a route in.
  enum Access: Sendable, Equatable {
    /// Anyone who can connect (LocalSend's API: its TLS and sessions do the rest).
    case open
    /// The link's token in the request's header (``LocalSendWebAccess/tokenHeader``), while
    /// the link lasts.
    case token
    /// The token too, and also after the link expired: what a yes granted goes on.
    case tokenGranted
    /// The session a yes granted (in the query): a download link cannot carry a header.
    case session
    /// The link's token in the path, while the link lasts.
    case link
  }

  /// One route: its method and path (for a ``Access/link`` route, what follows `/r/TOKEN`),
  /// and how each server that answers it lets a request in.
  struct Row: Sendable {
    let method: HTTPMethod
    let path: String
    let route: Route
    let access: [Server: Access]
  }

  /// Ferry's own routes beside LocalSend's: the whole share as one zip, and what a session
  /// has.
  enum FerryPath {
    /// `GET …?sessionId=`: every file in one zip archive, streamed (no copy is made).
    static let downloadAll = "/api/ferry/v1/download-all"
    /// `GET …?sessionId=`: the ids of the files this session downloaded whole.
    static let downloaded = "/api/ferry/v1/downloaded"
  }

  /// The table.
  static let rows: [Row] = [
    Row(
      method: .GET, path: LocalSendProtocol.Path.info, route: .info,
      access: [.localSend: .open, .webReceive: .token]),
    Row(
      method: .POST, path: LocalSendProtocol.Path.info, route: .info, access: [.localSend: .open]),
    Row(
      method: .GET, path: LocalSendProtocol.Path.infoV1, route: .info, access: [.localSend: .open]),
    Row(
      method: .POST, path: LocalSendProtocol.Path.register, route: .register,
      access: [.localSend: .open]),
    Row(
      method: .POST, path: LocalSendProtocol.Path.prepareUpload, route: .prepareUpload,
      access: [.localSend: .open, .webReceive: .token]),
    Row(
      method: .POST, path: LocalSendProtocol.Path.upload, route: .upload,
      access: [.localSend: .open, .webReceive: .tokenGranted]),
    Row(
      method: .POST, path: LocalSendProtocol.Path.cancel, route: .cancel,
      access: [.localSend: .open, .webReceive: .tokenGranted]),
    Row(
      method: .POST, path: LocalSendProtocol.Path.prepareDownload, route: .prepareDownload,
      access: [.webShare: .token]),
    Row(
      method: .GET, path: LocalSendProtocol.Path.download, route: .download,
      access: [.webShare: .session]),
    Row(
      method: .GET, path: FerryPath.downloadAll, route: .downloadAll,
      access: [.webShare: .session]),
    Row(
      method: .GET, path: FerryPath.downloaded, route: .downloaded,
      access: [.webShare: .session]),
    Row(method: .GET, path: "", route: .page, access: [.webReceive: .link, .webShare: .link]),
    Row(
      method: .GET, path: "/app.js", route: .script, access: [.webReceive: .link, .webShare: .link]),
    Row(
      method: .GET, path: "/app.css", route: .style, access: [.webReceive: .link, .webShare: .link]
    ),
    Row(
      method: .GET, path: "/expired.css", route: .expiredStyle,
      access: [.webReceive: .open, .webShare: .open]),
  ]

  /// What a request matched on `server`.
  struct Match: Sendable, Equatable {
    /// The route.
    let route: Route
    /// How the server lets it in.
    let access: Access
    /// For a ``Access/link`` route, the token in its path.
    let token: String?
  }

  /// The route `method` and `path` (no query) ask `server` for; nil when none.
  static func match(_ method: HTTPMethod, _ path: String, on server: Server) -> Match? {
    var token: String?
    var linked = path
    if path.hasPrefix("/r/") {
      // `/r/TOKEN` and what follows it.
      let rest = path.dropFirst(3)
      let end = rest.firstIndex(of: "/") ?? rest.endIndex
      token = String(rest[..<end])
      // (`/r/TOKEN/` is the page too.)
      linked = rest[end...] == "/" ? "" : String(rest[end...])
    }
    for row in rows where row.method == method {
      guard let access = row.access[server] else { continue }
      if access == .link ? (token != nil && row.path == linked) : (token == nil && row.path == path)
      {
        return Match(route: row.route, access: access, token: access == .link ? token : nil)
      }
    }
    return nil
  }

  /// A request target's path and its query's parameters (percent-decoded; the first of a
  /// repeated name).
  static func split(_ uri: String) -> (path: String, query: [String: String]) {
    let parts = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
    let path = String(parts.first ?? "")
    var query: [String: String] = [:]
    if parts.count == 2 {
      for pair in parts[1].split(separator: "&") {
        let item = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let name = String(item[0]).removingPercentEncoding ?? String(item[0])
        let value = item.count == 2 ? (String(item[1]).removingPercentEncoding ?? "") : ""
        if query[name] == nil { query[name] = value }
      }
    }
    return (path, query)
  }
}
