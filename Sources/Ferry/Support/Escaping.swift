/// Returns `string` with every control scalar — and, unless `keepingUnicode`, every non-ASCII
/// scalar — written as `\u{XXXX}`, and with `\` and `"` backslash-escaped, so that messages that
/// quote untrusted input stay on one printable line.
func escaped(_ string: String, keepingUnicode: Bool = false) -> String {
  var out = ""
  for scalar in string.unicodeScalars {
    let isControl = scalar.properties.generalCategory == .control
    if !isControl && (scalar.isASCII || keepingUnicode) {
      if scalar == "\\" || scalar == "\"" {
        out.append("\\")
      }
      out.unicodeScalars.append(scalar)
    } else {
      out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
    }
  }
  return out
}
