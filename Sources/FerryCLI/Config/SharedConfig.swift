import Ferry

/// What commands other than `ferry receive` read of the config file (`$FERRY_CONFIG`, else
/// `config.toml` in Ferry's home): its `[peers.NAME]` tables and its `[discovery]` table. Read
/// once per process; a config that cannot be read is said once on stderr, and nothing of it is
/// used (`ferry receive` refuses to start on it instead).
enum SharedConfig {
  private static let loaded: ReceiveConfig = {
    do throws(CLIFailure) {
      return try ReceiveConfig.load(explicit: nil)
    } catch {
      StandardStream.error.write(
        "ferry: \(DisplayText.terminalSafe(error.message)) (its [peers.NAME] and [discovery] "
          + "tables are not read)\n")
      return ReceiveConfig()
    }
  }()

  /// The `[peers.NAME]` tables.
  static var peers: [ConfigPeer] { loaded.peers }

  /// `[discovery] domains`.
  static var domains: [BrowseDomain] { loaded.domains }

  /// `[discovery] localsend_scan`, as addresses.
  static var localSendScan: [String] { loaded.localSendScan }
}
