/// The checks every request to the daemon's web page passes before anything else is read:
/// from this machine, to one of the page's own names (no DNS rebinding), from the page itself
/// (no other site's form or script), signed in (``UILogins``: the cookie for the page's files,
/// the cookie and the page's key for the API and the events). A pure function of the
/// request's head. Any thread.
package enum UIGuard {
  /// What becomes of a request.
  package enum Verdict: Equatable, Sendable {
    /// Served.
    case pass
    /// Refused with `status`, the API's `code` and words for people.
    case refuse(status: Int, code: String, message: String)
  }

  /// What the guard reads of a request.
  package struct Request: Sendable {
    /// Its method (`GET`, `POST` …).
    package var method: String
    /// Its path, without the query.
    package var path: Substring
    /// Its `Host` headers (one, for a request that passes).
    package var hosts: [String]
    /// Its `Origin` headers (none, or one).
    package var origins: [String]
    /// Its `Sec-Fetch-Site` header, when the browser sent one.
    package var fetchSite: String?
    /// Whether its connection comes from a loopback address.
    package var loopback: Bool
    /// What its cookie and key let it do (``UILogins/access(cookieHeaders:key:port:)``).
    package var access: UILogins.Access

    /// A request's head, as the guard reads it.
    package init(
      method: String, path: Substring, hosts: [String], origins: [String], fetchSite: String?,
      loopback: Bool, access: UILogins.Access
    ) {
      (self.method, self.path, self.hosts, self.origins, self.fetchSite) = (
        method, path, hosts, origins, fetchSite
      )
      (self.loopback, self.access) = (loopback, access)
    }
  }

  /// The path that turns a login secret into a cookie: the only one served signed out.
  package static let loginPath = "/login"

  /// The names the page answers to on `port`.
  package static func hosts(port: Int) -> Set<String> {
    ["127.0.0.1:\(port)", "[::1]:\(port)", "localhost:\(port)"]
  }

  /// Whether `request`, to the page on `port`, is served.
  package static func check(_ request: Request, port: Int) -> Verdict {
    guard request.loopback else {
      return .refuse(
        status: 403, code: "forbidden", message: "the page answers this machine only")
    }
    let names = hosts(port: port)
    guard request.hosts.count == 1, let host = request.hosts.first, names.contains(host) else {
      return .refuse(
        status: 403, code: "wrong-host",
        message: "the page answers as 127.0.0.1:\(port), [::1]:\(port) or localhost:\(port) only")
    }
    guard request.origins.count <= 1 else {
      return crossSite
    }
    if let origin = request.origins.first, origin != "http://" + host {
      return crossSite
    }
    let safe = request.method == "GET" || request.method == "HEAD"
    // A change needs the page's own Origin; a read other than the page itself, a request the
    // browser made for this very origin (or the person typed).
    if !safe && request.origins.isEmpty { return crossSite }
    // Another site may link to the page itself, never to the login (it could sign the browser
    // in to another daemon's page: the person opened ferry ui's link, which is `none`).
    if let site = request.fetchSite, site != "same-origin", site != "none",
      !(safe && request.path == "/")
    {
      return crossSite
    }
    // The API and the events need the page's key besides the cookie; the page's own files the
    // cookie.
    let needs: UILogins.Access =
      request.path == loginPath
      ? .none : (request.path.hasPrefix("/api/") || request.path == "/events" ? .full : .page)
    let enough =
      switch (needs, request.access) {
      case (.none, _), (.page, .page), (_, .full): true
      default: false
      }
    guard enough else {
      return .refuse(
        status: 401, code: "signed-out",
        message: "open the page with 'ferry ui' (its link works once)")
    }
    return .pass
  }

  private static let crossSite = Verdict.refuse(
    status: 403, code: "cross-site", message: "only the page itself may ask this")
}
