import ArgumentParser
import Ferry
import Foundation

/// Shell completion from the known peers (peers.json under `FERRY_HOME`): their names for
/// `--to`, their fingerprints for `trust` and `forget`. Runs inside the completion call, so it
/// only reads the file: nothing is discovered, nothing written.
enum PeerCompletion {
  /// Known peers' names, trusted first; for bash, each shell character escaped once for the
  /// generated script's `compgen -W` (which expands the list), so that COMPREPLY holds the
  /// name itself and readline (`complete -o filenames`) quotes it as it inserts it.
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

  /// `name` with each character a shell gives a meaning backslash-escaped once: `compgen -W`
  /// expands and removes the quoting, and readline quotes the result again for the line.
  static func escapedForBash(_ name: String) -> String {
    let special = Set(" \t'\"\\$`!&|;<>()[]{}*?#~=%")
    return String(name.flatMap { special.contains($0) ? ["\\", $0] : [$0] })
  }

  /// Known peers' full fingerprints.
  static let fingerprints = CompletionKind.custom { _, _, _ in
    ((try? KnownPeers().all()) ?? []).map(\.fingerprint)
  }
}
