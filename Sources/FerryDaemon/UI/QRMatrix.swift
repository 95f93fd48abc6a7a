import CQRencode

/// A QR code's modules, from libqrencode (level M, 8-bit mode): what the terminal's banner
/// draws in half blocks and the web page as SVG. Any thread.
package struct QRMatrix: Sendable {
  /// Modules per side.
  package let width: Int
  private let modules: [Bool]

  /// The code of `text`; nil when it cannot be encoded (too long).
  package init?(_ text: String) {
    guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else { return nil }
    defer { QRcode_free(code) }
    width = Int(code.pointee.width)
    // Module (x, y) is dark when bit 0 of its byte is set.
    modules = (0..<(width * width)).map { code.pointee.data[$0] & 1 == 1 }
  }

  /// Whether module (`x`, `y`) is dark; outside the code (its quiet zone), false.
  package func dark(_ x: Int, _ y: Int) -> Bool {
    guard x >= 0, y >= 0, x < width, y < width else { return false }
    return modules[y * width + x]
  }

  /// The code as an SVG image: black on white, a quiet zone of four modules.
  package var svg: String {
    let size = width + 8
    var path = ""
    for y in 0..<width {
      for x in 0..<width where dark(x, y) { path += "M\(x + 4) \(y + 4)h1v1h-1z" }
    }
    return """
      <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(size) \(size)" \
      shape-rendering="crispEdges"><rect width="\(size)" height="\(size)" fill="#fff"/>\
      <path fill="#000" d="\(path)"/></svg>
      """
  }
}
