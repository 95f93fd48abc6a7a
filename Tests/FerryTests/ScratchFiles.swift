import Foundation

/// A fresh folder under the temporary directory, named after `label`.
func scratchFolder(_ label: String) throws -> String {
  let path = NSTemporaryDirectory() + "ferry-\(label)-\(UUID().uuidString)"
  try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
  return path
}

/// Writes `text` to the file at `path`, making its folders first.
func writeText(_ path: String, _ text: String = "x") throws {
  try FileManager.default.createDirectory(
    atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
  try Data(text.utf8).write(to: URL(fileURLWithPath: path))
}
