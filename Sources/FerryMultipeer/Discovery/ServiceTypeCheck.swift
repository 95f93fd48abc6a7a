import Ferry

/// Apple's check of a service type: what MultipeerConnectivity refuses with an exception,
/// this traps on with the reason (a programming error, never something from the network).
enum ServiceTypeCheck {
  static func validated(_ serviceType: String, by caller: String) -> ServiceType {
    do {
      return try ServiceType(serviceType)
    } catch {
      preconditionFailure(
        "\(caller): invalid serviceType \(serviceType.debugDescription): \(error)")
    }
  }
}
