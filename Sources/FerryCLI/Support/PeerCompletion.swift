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

  /// Known peers' full fingerprints; zsh and fish show each one's name beside it
  /// (`FPR:NAME` for zsh's `_describe`, `FPR<TAB>NAME` for fish), bash the bare fingerprint
  /// (its `compgen -W` has no descriptions). A name is shown without its control or format
  /// characters, and without the characters each shell reads as separators.
  static let fingerprints = CompletionKind.custom { _, _, _ in
    let shell = ProcessInfo.processInfo.environment["SAP_SHELL"]
    return ((try? KnownPeers().all()) ?? []).map { peer in
      described(peer.fingerprint, name: peer.name, trusted: peer.trusted, shell: shell)
    }
  }

  /// `fingerprint` with `name` as its description in `shell`'s completion syntax.
  static func described(_ fingerprint: String, name: String, trusted: Bool, shell: String?)
    -> String
  {
    let separator: Character
    switch shell {
    case "zsh": separator = ":"
    case "fish": separator = "\t"
    default: return fingerprint
    }
    let shown = String(
      String.UnicodeScalarView(
        name.unicodeScalars.filter {
          $0.properties.generalCategory != .control && $0.properties.generalCategory != .format
        }))
    let description = (shown.isEmpty ? "(no name)" : shown) + (trusted ? " (trusted)" : "")
    return fingerprint + String(separator) + description
  }
}
