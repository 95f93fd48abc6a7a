/// A LocalSend device as it describes itself — in an announcement, a `register`, an `info`
/// answer or a `prepare-upload`'s `info` — every field checked on its bytes when decoded
/// (``LocalSendJSON``). Its fingerprint is only what it says until its certificate proves it.
public struct LocalSendDevice: Codable, Hashable, Sendable {
  /// The name it shows (any text: escape it before a terminal sees it).
  public var alias: String
  /// The protocol version it speaks ("2.2", "2.1", "1.0").
  public var version: String
  /// Its model ("Pixel 8", "iPhone"), when it says.
  public var deviceModel: String?
  /// What it is: mobile, desktop, web, headless or server (others are kept as they came).
  public var deviceType: String?
  /// Upper-case hex SHA-256 of its certificate (HTTPS), or a random string (plain HTTP).
  public var fingerprint: String
  /// The port of its server.
  public var port: Int?
  /// "https" or "http".
  public var `protocol`: String?
  /// Whether it serves downloads ("share via link").
  public var download: Bool?
  /// Set in a multicast announcement: whoever hears it answers.
  public var announce: Bool?
  /// Set by LocalSend 1.x in announcements (`announcement`), read like ``announce``.
  public var announcement: Bool?

  /// Describes a device.
  public init(
    alias: String, version: String = LocalSendProtocol.version, deviceModel: String?,
    deviceType: String?, fingerprint: String, port: Int?, protocol: String? = "https",
    download: Bool? = false, announce: Bool? = nil
  ) {
    self.alias = alias
    self.version = version
    self.deviceModel = deviceModel
    self.deviceType = deviceType
    self.fingerprint = fingerprint
    self.port = port
    self.protocol = `protocol`
    self.download = download
    self.announce = announce
  }

  /// Whether it asks to be answered (an announcement rather than an answer).
  public var asksForAnswer: Bool { announce == true || announcement == true }

  /// Whether it serves HTTPS (anything but an explicit "http").
  public var usesTLS: Bool { `protocol` != "http" }

  /// The device as an answer to an announcement or to `info` (no `announce`).
  var answer: LocalSendDevice {
    var copy = self
    copy.announce = nil
    copy.announcement = nil
    return copy
  }

  /// Checks every field's size and range; called on everything a peer sends.
  ///
  /// - Throws: ``LocalSendJSONError`` naming the field.
  func validated() throws(LocalSendJSONError) -> LocalSendDevice {
    try LocalSendJSON.checkShort(alias, "alias", allowEmpty: true)
    try LocalSendJSON.checkShort(version, "version")
    if let deviceModel {
      try LocalSendJSON.checkShort(deviceModel, "deviceModel", allowEmpty: true)
    }
    if let deviceType { try LocalSendJSON.checkShort(deviceType, "deviceType", allowEmpty: true) }
    try LocalSendJSON.checkShort(fingerprint, "fingerprint")
    if let port, !(1...65_535).contains(port) { throw .invalid("port", "\(port)") }
    if let `protocol`, `protocol` != "http", `protocol` != "https" {
      throw .invalid("protocol", LocalSendJSON.shown(`protocol`))
    }
    return self
  }
}
