import Ferry
import FerryAgent
import FerryLocalSend
import Foundation

/// `ferry receive --web`: a page served over plain HTTP at a link with an unguessable token,
/// printed (and drawn as a QR code on a terminal) for each address this machine has on the
/// local network. A browser's files go through the LocalSend front end's endpoints into the
/// same ``Receiver`` and ``ReceiveReporter`` as every other sender's.
enum WebReceiving {
  /// Starts the page's server.
  ///
  /// - Throws: ``CLIFailure`` (`cannot-listen`) when the port is taken.
  static func start(
    _ options: WebReceiveOptions, identity: Identity, displayName: String, output: EventWriter
  ) async throws(CLIFailure) -> (server: LocalSendServer, expires: ContinuousClock.Instant) {
    let access = LocalSendWebAccess(
      token: LocalSendWebAccess.newToken(),
      expires: .now + .milliseconds(Int64(options.minutes * 60_000)))
    let server: LocalSendServer
    do {
      server = try LocalSendServer(
        LocalSendServer.Configuration(
          identity: identity, alias: displayName, deviceModel: "Ferry", deviceType: "headless",
          port: options.port, senderCheck: .allowUnverified, plainHTTP: true, web: access))
      try await server.start()
    } catch {
      throw CLIFailure(
        status: .usage,
        message: "cannot serve the web page on port \(options.port): \(ErrorWords.describe(error))",
        code: .cannotListen)
    }
    let urls = LocalSendWebAccess.addresses().map {
      "http://\($0):\(server.port)\(access.pagePath)"
    }
    let expires = Date.now.addingTimeInterval(options.minutes * 60)
    output.emit(
      WebLink(urls: urls, port: Int(server.port), expires: EventWriter.timestamp(expires)))
    WebLinkBanner.show(urls, minutes: options.minutes, doing: "send files", output: output)
    return (server, access.expires)
  }

}
