import Ferry
import FerryAgent
import FerryLocalSend

/// How senders reach `ferry daemon`: the Ferry listener, advertised, and — with
/// `localsend = true` — the LocalSend server and its discovery, as `ferry receive` starts them.
struct DaemonFrontEnds: Sendable {
  let session: Session
  let advertiser: Advertiser
  let localSend: LocalSendReceiving?

  /// What the receiver is handed.
  var frontEnds: [Receiver.FrontEnd] {
    [.ferry(session, advertiser)] + (localSend.map { [$0.frontEnd] } ?? [])
  }

  /// Starts them. `localSendOptional`: LocalSend was asked for by `--localsend`, not the
  /// config — when its port cannot be had (a LocalSend app here), the daemon runs without it,
  /// and says so.
  ///
  /// - Throws: ``CLIFailure`` when the port cannot be listened on, or the name is wrong.
  static func start(
    settings: ReceiveSettings, identity: Identity, knownPeers: KnownPeers, output: EventWriter,
    localSendOptional: Bool = false
  ) async throws(CLIFailure) -> DaemonFrontEnds {
    let session: Session
    let advertiser: Advertiser
    do {
      // Files only: messages and streams nobody here reads are refused, not buffered.
      session = try Session(identity: identity, displayName: settings.name, accepting: [])
      advertiser = try Advertiser(
        identity: identity, displayName: settings.name, serviceType: settings.service,
        port: settings.port, knownPeers: knownPeers)
      session.askAboutResourceOffers()
    } catch let error as DiscoveryError {
      throw cliFailure(error)
    } catch {
      throw CLIFailure(status: .usage, message: "\(error)", code: .invalidName)
    }
    var localSend: LocalSendReceiving?
    if settings.localsend {
      do throws(CLIFailure) {
        localSend = try await LocalSendReceiving.start(
          ReceiveCommand.defaultLocalSendOptions, identity: identity,
          displayName: settings.name, output: output)
      } catch {
        guard localSendOptional else { throw error }
        output.note("ferry daemon: not answering LocalSend apps: \(error.message)")
      }
    }
    do {
      let preferred = settings.port == 0 ? LastPort.read() : nil
      LastPort.record(try await advertiser.listen(preferring: preferred), preferred: preferred)
    } catch {
      localSend?.stopListening()
      throw cliFailure(error)
    }
    return DaemonFrontEnds(session: session, advertiser: advertiser, localSend: localSend)
  }

  /// Stops listening (the daemon could not start).
  func stop() {
    advertiser.stop()
    localSend?.stopListening()
  }
}

extension ReceiveCommand {
  /// LocalSend's options as `ferry receive --localsend` has them by default.
  static var defaultLocalSendOptions: LocalSendReceiveOptions {
    (try? ReceiveCommand.parse(["--localsend"]))?.localSend ?? LocalSendReceiveOptions()
  }
}
