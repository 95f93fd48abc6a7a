/// Returns `string` with every non-ASCII or control scalar written as `\u{XXXX}`, so that messages
/// that quote untrusted input stay on one printable line.
func escaped(_ string: String) -> String {
  var out = ""
  for scalar in string.unicodeScalars {
    if scalar.isASCII && scalar.value >= 0x20 && scalar.value != 0x7F {
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
