import Ferry
import FerryAgent
import FerryLocalSend
import Foundation

/// `ferry send --localsend`: finds the LocalSend device (by name or key, at an address, or
/// already found), then hands the batch (or `--text`) to a ``LocalSendDelivery``, which sends
/// it with the progress, events and retries of a Ferry send; shown by ``SendReporter``.
struct LocalSendSending: Sendable {
  let identity: Identity
  let name: String
  let pin: String?
  let output: EventWriter
  let bar: ProgressBar
  let knownPeers: KnownPeers
  let decider: TerminalSendDecider
  let deadline: ContinuousClock.Instant
  let retryFor: Duration
  /// What Ctrl-C must undo besides the upload (standard input's spool).
  var cleanup: @Sendable () -> Void = {}

  /// How this machine presents itself to LocalSend devices.
  var me: LocalSendDevice {
    LocalSendDevice(
      alias: name, deviceModel: "Ferry", deviceType: "headless",
      fingerprint: identity.fingerprint.hexString, port: Int(LocalSendProtocol.defaultPort),
      protocol: "https", download: false)
  }

  /// Finds devices as this machine.
  var targets: LocalSendTargets { LocalSendTargets(identity: identity, me: me, output: output) }

  /// Sends `batch` or `text` to the device `to` names (classified as `reference`: a trusted
  /// name also finds its key), or the one at `address`, or the one already `found`.
  ///
  /// - Throws: ``CLIFailure``: declined (exit 4), busy or failed (1), PIN (5), not found (3).
  func run(
    batch: SendBatch?, text: String?, to wanted: String?, as reference: PeerReference? = nil,
    address: String?, found known: LocalSendTargets.Found? = nil
  ) async throws(CLIFailure) {
    let upload = try targets.makeUpload()
    let found: LocalSendTargets.Found
    if let known {
      found = known
    } else if let address {
      found = try await targets.ask(
        address: address, wanted: wanted, upload: upload, plainHTTP: false)
    } else {
      found = try await targets.discover(
        wanted, as: reference, until: deadline, upload: upload)
    }
    let reporter = SendReporter(output: output, bar: bar)
    let delivery = LocalSendDelivery(
      to: found.target, device: found.device, pinned: found.pinned, upload: upload, pin: pin,
      retry: RetryPolicy(retryFor: retryFor), deadline: deadline, knownPeers: knownPeers,
      decider: decider, events: reporter.report)
    // (Replaces the command's earlier cleanup, which is done here too.)
    Interrupts.onInterrupt(reportingTo: output) { [cleanup] in
      cleanup()
      await upload.cancel()
    }
    if let failure = await delivery.send(batch: batch, text: text) {
      throw CLIFailure(failure)
    }
  }
}
