/// The constants of the LocalSend protocol (v2.2, as LocalSend 1.18 speaks it; v2.1 and the
/// v1 `info` path answered for older apps): docs/LOCALSEND.md.
public enum LocalSendProtocol {
  /// The protocol version this side announces.
  public static let version = "2.2"
  /// The default TCP port of the HTTP(S) server, and the UDP port of discovery.
  public static let defaultPort: UInt16 = 53317
  /// The IPv4 multicast group announcements go to.
  public static let multicastGroupV4 = "224.0.0.167"
  /// The IPv6 multicast group (protocol 2.2).
  public static let multicastGroupV6 = "ff12::fd3a:e420"

  /// The API paths, under `/api/localsend/v2/` (and `v1` for `info`).
  enum Path {
    static let register = "/api/localsend/v2/register"
    static let info = "/api/localsend/v2/info"
    static let infoV1 = "/api/localsend/v1/info"
    static let prepareUpload = "/api/localsend/v2/prepare-upload"
    static let upload = "/api/localsend/v2/upload"
    static let cancel = "/api/localsend/v2/cancel"
    static let prepareDownload = "/api/localsend/v2/prepare-download"
    static let download = "/api/localsend/v2/download"
  }

  /// What one request may carry before it is refused (and its connection closed).
  public enum Limits {
    /// The most bytes of a JSON body (register, prepare-upload).
    public static let maximumJSONBytes = 4 << 20
    /// The most files one prepare-upload offers.
    public static let maximumFiles = 10_000
    /// The most UTF-8 bytes of a text message (a `text/plain` file's preview).
    public static let maximumTextBytes = 1 << 20
    /// The most UTF-8 bytes of a short field: alias, device model, ids, tokens, file type.
    public static let maximumFieldBytes = 256
    /// The most UTF-8 bytes of a file name (a `/`-joined relative path).
    public static let maximumFileNameBytes = 4096
    /// The most bytes one file may hold (2^62, as a Ferry offer).
    public static let maximumFileSize: UInt64 = 1 << 62
  }
}
