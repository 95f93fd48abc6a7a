import Logging
import ServiceLifecycle

extension ServiceGroup {
  /// The group a receiving command (`receive`, `daemon`) runs: `receiver` alone, the group
  /// shut down gracefully when it ends (`--once`, a web link's end) or fails, or when the
  /// command cancels it; its logger (`label`) says only what is critical.
  static func receiving(_ receiver: some Service, label: String) -> ServiceGroup {
    var logger = Logger(label: label)
    logger.logLevel = .critical
    return ServiceGroup(
      configuration: ServiceGroupConfiguration(
        services: [
          .init(
            service: receiver, successTerminationBehavior: .gracefullyShutdownGroup,
            failureTerminationBehavior: .gracefullyShutdownGroup)
        ], logger: logger))
  }
}
