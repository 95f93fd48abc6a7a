#if canImport(Glibc)
  import Glibc
#endif

/// The system's words for the error `code` (an errno value), as cp or cat print them: "no such
/// file or directory", not Foundation's sentence.
package func systemWords(_ code: Int32) -> String {
  String(cString: strerror(code)).lowercased()
}
