extension Duration {
  /// The duration in seconds, with its fraction (for dates, dispatch times and printing).
  var inSeconds: Double {
    Double(components.seconds) + Double(components.attoseconds) / 1e18
  }
}
