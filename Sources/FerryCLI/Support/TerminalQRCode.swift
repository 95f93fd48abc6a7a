import FerryDaemon

/// A QR code drawn in the terminal (``QRMatrix``: libqrencode, level M, 8-bit mode), two
/// modules per character cell with half blocks, inside a quiet zone of two modules.
enum TerminalQRCode {
  /// The lines that draw `text`, or nil when it cannot be encoded (too long).
  ///
  /// - Parameter colors: Dark on light by ANSI colours (any terminal background); without,
  ///   light modules are drawn as blocks, which reads right on a dark background only.
  static func lines(for text: String, colors: Bool) -> [String]? {
    guard let code = QRMatrix(text) else { return nil }
    let quiet = 2
    let size = code.width + 2 * quiet
    // The quiet zone is light.
    func dark(_ x: Int, _ y: Int) -> Bool { code.dark(x - quiet, y - quiet) }
    var lines: [String] = []
    for y in stride(from: 0, to: size, by: 2) {
      var line = colors ? "\u{1B}[30;47m" : ""
      for x in 0..<size {
        // Drawn: dark modules with colours (black on white), light ones without.
        let top = dark(x, y) == colors
        let bottom = y + 1 < size && dark(x, y + 1) == colors
        switch (top, bottom) {
        case (true, true): line += "█"
        case (true, false): line += "▀"
        case (false, true): line += "▄"
        case (false, false): line += " "
        }
      }
      lines.append(line + (colors ? "\u{1B}[0m" : ""))
    }
    return lines
  }

  /// How many columns `lines` (from ``lines(for:colors:)``) take: one per module of a row,
  /// colours aside.
  static func width(of lines: [String]) -> Int {
    guard let line = lines.first else { return 0 }
    return line.unicodeScalars.filter { "█▀▄ ".unicodeScalars.contains($0) }.count
  }
}
