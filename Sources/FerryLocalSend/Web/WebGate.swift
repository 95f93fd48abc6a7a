import NIOHTTP1
import Synchronization

/// What a web receiver (``LocalSendWebAccess``) answers before any route runs: the page and
/// its script and style under the link, LocalSend's upload endpoints for requests that carry
/// the token, and the plain "expired or wrong link" page for everything else. An address that
/// presents 20 wrong tokens has its wrong tokens refused (429) until the server stops; past
/// ``rememberedAddresses``, every address not counted yet shares one count (an IPv6 network
/// has addresses enough to pass any list), so the limit never stops counting. The right
/// token, and a download a yes granted, are never refused for it: a device that guesses from
/// many addresses cannot lock the person's browser out (a 128-bit token is not guessed).
/// Thread-safe.
final class WebGate: Sendable {
  /// What a request gets.
  enum Verdict: Equatable {
    /// On to LocalSend's routes.
    case pass
    /// This answer, and nothing else.
    case serve(HTTPResponseStatus, body: String, type: String)
  }

  /// Which page is served: the one that uploads (`receive --web`) or downloads (`send --web`).
  enum Page: Sendable {
    case receive, share
  }

  let access: LocalSendWebAccess
  let page: Page
  /// Wrong tokens by address (at most ``rememberedAddresses`` kept), and those of every
  /// address past them, together.
  private let wrongTokens = Mutex<(byAddress: [String: Int], others: Int)>(([:], 0))
  /// Addresses whose wrong tokens are counted one by one.
  static let rememberedAddresses = 4096

  init(_ access: LocalSendWebAccess, page: Page = .receive) {
    self.access = access
    self.page = page
  }

  /// The server whose routes it lets requests in to.
  var server: HTTPRoutes.Server { page == .receive ? .webReceive : .webShare }

  /// The verdict on a request for `path` (no query) with `method` and `headers`, from
  /// `address`, by the route it matches (``HTTPRoutes``) and how the route lets it in.
  func verdict(method: HTTPMethod, path: String, headers: HTTPHeaders, address: String) -> Verdict {
    let html = "text/html; charset=utf-8"
    let refused = Verdict.serve(.notFound, body: WebPage.expired, type: html)
    let match = HTTPRoutes.match(method, path, on: server)
    if match?.access == .session {
      // A download link cannot carry a header: its session (granted to this address after
      // the person said yes) is its key, checked by the share endpoints — also after the link
      // expired, for a browser already let in.
      return .pass
    }
    if path.hasPrefix("/api/localsend/") {
      guard let given = headers.first(name: LocalSendWebAccess.tokenHeader), access.matches(given)
      else {
        return wrong(address, .serve(.forbidden, body: WebPage.expired, type: html))
      }
      // What a yes already granted (a session's uploads, its cancel) goes on after the link
      // expired; nothing new starts.
      guard access.isValid || match?.access == .tokenGranted else {
        return .serve(.gone, body: WebPage.expired, type: html)
      }
      return match == nil ? refused : .pass
    }
    if match?.route == .expiredStyle {
      // The plain page's style: nothing secret, served to anyone.
      return .serve(.ok, body: WebPage.css, type: "text/css; charset=utf-8")
    }
    guard method == .GET, path.hasPrefix("/r/") else { return refused }
    let token = path.dropFirst(3).prefix { $0 != "/" }
    guard access.matches(String(token)) else { return wrong(address, refused) }
    guard access.isValid else { return .serve(.gone, body: WebPage.expired, type: html) }
    switch match?.route {
    case .page?:
      let body =
        page == .receive
        ? WebPage.html(base: access.pagePath) : WebSharePage.html(base: access.pagePath)
      return .serve(.ok, body: body, type: html)
    case .script?:
      let script = page == .receive ? WebPage.script : WebSharePage.script
      return .serve(.ok, body: script, type: "text/javascript; charset=utf-8")
    case .style?:
      return .serve(.ok, body: WebPage.css, type: "text/css; charset=utf-8")
    default:
      return refused
    }
  }

  /// A wrong token from `address`: `verdict`, or 429 once it (or, past the list, everyone not
  /// on it) has presented ``LocalSendWebAccess/wrongTokensPerAddress``; counted either way.
  private func wrong(_ address: String, _ verdict: Verdict) -> Verdict {
    let limited = wrongTokens.withLock { counts -> Bool in
      let limited = Self.count(of: address, in: counts) >= LocalSendWebAccess.wrongTokensPerAddress
      if counts.byAddress[address] != nil || counts.byAddress.count < Self.rememberedAddresses {
        counts.byAddress[address, default: 0] += 1
      } else {
        counts.others += 1
      }
      return limited
    }
    return limited
      ? .serve(.tooManyRequests, body: WebPage.expired, type: "text/html; charset=utf-8")
      : verdict
  }

  /// The wrong tokens counted against `address`: its own, or — once the list is full and it
  /// is not on it — every other address's together.
  private static func count(of address: String, in counts: (byAddress: [String: Int], others: Int))
    -> Int
  {
    if let own = counts.byAddress[address] { return own }
    return counts.byAddress.count < rememberedAddresses ? 0 : counts.others
  }
}
