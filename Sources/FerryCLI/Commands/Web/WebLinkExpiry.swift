import ArgumentParser

/// How long a web link works: what `--web-expires` means for `receive --web` and `send --web`
/// alike.
enum WebLinkExpiry {
  /// Minutes when `--web-expires` is not given.
  static let defaultMinutes: Double = 10

  /// The minutes `--web-expires` gave, or the default.
  static func minutes(_ chosen: Double?) -> Double { chosen ?? defaultMinutes }

  /// Refuses a link that expires at once, or after more than a day.
  ///
  /// - Throws: `ValidationError` naming the option and its bounds.
  static func validate(_ minutes: Double) throws {
    guard minutes > 0, minutes <= 24 * 60 else {
      throw ValidationError("--web-expires must be between 0 and 1440 minutes")
    }
  }
}
