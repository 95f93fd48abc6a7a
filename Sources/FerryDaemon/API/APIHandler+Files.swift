import FerryAPI
import Foundation

extension APIHandler {
  package func listFolder(_ input: Operations.listFolder.Input) async throws
    -> Operations.listFolder.Output
  {
    let listing = HomeListing(home: HomeListing.userHome())
    let found: (path: String, entries: [HomeListing.Entry], truncated: Bool)
    do {
      found = try listing.list(input.query.path, hidden: input.query.hidden ?? false)
    } catch .malformed {
      throw APIProblem.badRequest("a folder is an absolute path without . or ..")
    } catch .outside {
      throw APIProblem(403, "outside-home", "only folders in \(listing.home) are listed")
    } catch .unreadable(let reason) {
      throw APIProblem(400, "cannot-read", "that folder cannot be listed: \(reason)")
    }
    let parent =
      found.path == listing.home ? nil : (found.path as NSString).deletingLastPathComponent
    return .ok(
      .init(
        body: .json(
          .init(
            path: found.path, parent: parent, home: listing.home, truncated: found.truncated,
            entries: found.entries.map { entry in
              .init(
                name: entry.name, kind: .init(rawValue: entry.kind.rawValue) ?? .other,
                size: entry.size.map { Int($0) }, modified: entry.modified)
            }))))
  }
}
