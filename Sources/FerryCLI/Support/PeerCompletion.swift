import ArgumentParser
import Ferry
import Foundation

/// Shell completion from the known peers (peers.json under `FERRY_HOME`): their names for
/// `--to`, their fingerprints for `trust` and `forget`. Runs inside the completion call, so it
/// only reads the file: nothing is discovered, nothing written.
enum PeerCompletion {
  /// Known peers' names, trusted first; for bash, spaces and shell characters escaped with a
  /// backslash (bash inserts a completion as typed text; zsh and fish quote it themselves).
  static let names = CompletionKind.custom { _, _, _ in
    let entries = (try? KnownPeers().all()) ?? []
    let ordered = entries.filter(\.trusted) + entries.filter { !$0.trusted }
    var seen = Set<String>()
    // A name with a control or format character (an escape sequence, a bidi override) is
    // left out: the shell would put it on the command line and the terminal act on it.
    let names = ordered.map(\.name).filter { name in
      !name.isEmpty
        && !name.unicodeScalars.contains {
          $0.properties.generalCategory == .control || $0.properties.generalCategory == .format
        } && seen.insert(name).inserted
    }
    guard ProcessInfo.processInfo.environment["SAP_SHELL"] == "bash" else { return names }
    return names.map(escapedForBash)
  }

  /// `name` with each character a shell gives a meaning backslash-escaped — twice, since the
  /// generated script passes the list through `compgen -W`, which removes one level.
  static func escapedForBash(_ name: String) -> String {
    let special = Set(" \t'\"\\$`!&|;<>()[]{}*?#~=%")
    return String(name.flatMap { special.contains($0) ? ["\\", "\\", "\\", $0] : [$0] })
  }

  /// Known peers' full fingerprints.
  static let fingerprints = CompletionKind.custom { _, _, _ in
    ((try? KnownPeers().all()) ?? []).map(\.fingerprint)
  }
}
