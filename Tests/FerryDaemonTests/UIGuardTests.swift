import Testing

@testable import FerryDaemon

/// The web page's guard: every request from this machine, to the page's own names, from the
/// page itself, signed in — checked on the head alone.
@Suite("The web page's guard")
struct UIGuardTests {
  static let port = 8385

  /// A signed-in GET from the page itself, changed by `change`.
  static func request(_ change: (inout UIGuard.Request) -> Void = { _ in }) -> UIGuard.Request {
    var request = UIGuard.Request(
      method: "GET", path: "/api/v1/status", hosts: ["127.0.0.1:\(port)"], origins: [],
      fetchSite: "same-origin", loopback: true, access: .full)
    change(&request)
    return request
  }

  static func code(_ request: UIGuard.Request) -> String? {
    guard case .refuse(_, let code, _) = UIGuard.check(request, port: port) else { return nil }
    return code
  }

  @Test("the page's own requests pass, under each of its three names")
  func own() {
    for host in ["127.0.0.1:8385", "[::1]:8385", "localhost:8385"] {
      #expect(Self.code(Self.request { $0.hosts = [host] }) == nil)
      let post = Self.request {
        $0.method = "POST"
        $0.hosts = [host]
        $0.origins = ["http://" + host]
      }
      #expect(Self.code(post) == nil, "POST with Origin http://\(host)")
    }
  }

  @Test("a connection from another address is refused, whatever it carries")
  func address() {
    #expect(Self.code(Self.request { $0.loopback = false }) == "forbidden")
  }

  @Test("another Host, none, two, another port or a look-alike is refused (DNS rebinding)")
  func host() {
    let hosts: [[String]] = [
      ["attacker.example:8385"], [], ["127.0.0.1:8385", "127.0.0.1:8385"], ["127.0.0.1:8386"],
      ["127.0.0.1"], ["LOCALHOST:8385"], ["127.0.0.1.:8385"], ["127.0.0.1:8385 "],
      ["0x7f.0.0.1:8385"], ["127.1:8385"],
    ]
    for given in hosts {
      #expect(Self.code(Self.request { $0.hosts = given }) == "wrong-host", "\(given)")
    }
  }

  @Test("a foreign Origin, another port's, null or two are refused, for reads and changes")
  func origin() {
    let origins: [[String]] = [
      ["http://attacker.example"], ["http://127.0.0.1:1"], ["null"], ["https://127.0.0.1:8385"],
      ["http://localhost:8385"], ["http://127.0.0.1:8385", "http://127.0.0.1:8385"],
    ]
    for given in origins {
      for method in ["GET", "POST", "DELETE"] {
        let request = Self.request {
          $0.method = method
          $0.origins = given
        }
        #expect(Self.code(request) == "cross-site", "\(method) \(given)")
      }
    }
  }

  @Test("a change without an Origin is refused; a read without one passes")
  func changes() {
    for method in ["POST", "DELETE", "PUT", "PATCH"] {
      #expect(Self.code(Self.request { $0.method = method }) == "cross-site", "\(method)")
    }
    #expect(Self.code(Self.request { $0.fetchSite = nil }) == nil)
  }

  @Test("another site's requests are refused, but for opening the page; the login only as typed")
  func fetchSite() {
    for site in ["cross-site", "same-site"] {
      #expect(Self.code(Self.request { $0.fetchSite = site }) == "cross-site", "\(site)")
      let navigation = Self.request {
        $0.fetchSite = site
        $0.path = "/"
      }
      #expect(Self.code(navigation) == nil, "\(site) /")
      let login = Self.request {
        $0.fetchSite = site
        $0.path = Substring(UIGuard.loginPath)
        $0.access = .none
      }
      #expect(Self.code(login) == "cross-site", "\(site) login")
      let post = Self.request {
        $0.method = "POST"
        $0.path = "/"
        $0.fetchSite = site
        $0.origins = ["http://127.0.0.1:8385"]
      }
      #expect(Self.code(post) == "cross-site", "POST / from \(site)")
    }
  }

  @Test("the cookie alone opens the page's files, not the API or the events")
  func pageOnly() {
    for path in ["/", "/ui.js", "/qr.svg"] {
      #expect(
        Self.code(
          Self.request {
            $0.path = Substring(path)
            $0.access = .page
          }) == nil)
    }
    for path in ["/api/v1/status", "/events", "/api/"] {
      let request = Self.request {
        $0.path = Substring(path)
        $0.access = .page
      }
      #expect(Self.code(request) == "signed-out", "\(path)")
    }
  }

  @Test("signed out, only the login path is served")
  func signedOut() {
    for path in ["/", "/api/v1/status", "/events", "/ui.js", "/login/x", "/LOGIN"] {
      let request = Self.request {
        $0.path = Substring(path)
        $0.access = .none
      }
      #expect(Self.code(request) == "signed-out", "\(path)")
    }
    let login = Self.request {
      $0.path = Substring(UIGuard.loginPath)
      $0.access = .none
    }
    #expect(Self.code(login) == nil)
  }
}
