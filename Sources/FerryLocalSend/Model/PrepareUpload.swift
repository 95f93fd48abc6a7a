/// One file of a `prepare-upload`, as the sender describes it.
public struct LocalSendFile: Codable, Hashable, Sendable {
  /// Its id in this session (any text the sender chose).
  public var id: String
  /// Its name: a `/`-joined path relative to where the receiver puts it (confined there, byte
  /// by byte, before anything is written).
  public var fileName: String
  /// Its size in bytes: what the upload's body must hold.
  public var size: UInt64
  /// Its MIME type ("text/plain" with a ``preview`` is a text message).
  public var fileType: String
  /// Lower- or upper-case hex SHA-256 of its bytes (protocol 2.2 checks it; optional).
  public var sha256: String?
  /// A text message's text, or a small preview the receiver may show.
  public var preview: String?
  /// When it was modified and accessed (ISO 8601), when the sender says.
  public var metadata: Metadata?

  /// A file's times.
  public struct Metadata: Codable, Hashable, Sendable {
    /// When the file was last changed (ISO 8601), as the sender says.
    public var modified: String?
    /// When the file was last read (ISO 8601), as the sender says.
    public var accessed: String?

    /// Makes one from its fields.
    public init(modified: String? = nil, accessed: String? = nil) {
      self.modified = modified
      self.accessed = accessed
    }
  }

  /// Describes a file.
  public init(
    id: String, fileName: String, size: UInt64, fileType: String, sha256: String? = nil,
    preview: String? = nil, metadata: Metadata? = nil
  ) {
    self.id = id
    self.fileName = fileName
    self.size = size
    self.fileType = fileType
    self.sha256 = sha256
    self.preview = preview
    self.metadata = metadata
  }

  /// Whether it is a text message rather than a file: text/plain with its text in `preview`.
  public var isText: Bool { fileType == "text/plain" && preview != nil }

  /// Its SHA-256 as 32 bytes, nil when none was given.
  ///
  /// - Throws: ``LocalSendJSONError`` when one was given and is not 64 hex digits.
  func digest() throws(LocalSendJSONError) -> [UInt8]? {
    guard let sha256 else { return nil }
    guard let bytes = LocalSendJSON.hexBytes(sha256), bytes.count == 32 else {
      throw .invalid("sha256", LocalSendJSON.shown(sha256))
    }
    return bytes
  }

  /// Checks every field's size and range.
  ///
  /// - Throws: ``LocalSendJSONError`` naming the field.
  func validated() throws(LocalSendJSONError) -> LocalSendFile {
    try LocalSendJSON.checkShort(id, "id")
    try LocalSendJSON.checkShort(fileType, "fileType", allowEmpty: true)
    guard !fileName.isEmpty, fileName.utf8.count <= LocalSendProtocol.Limits.maximumFileNameBytes
    else { throw .invalid("fileName", "\(fileName.utf8.count) bytes") }
    guard size <= LocalSendProtocol.Limits.maximumFileSize else {
      throw .invalid("size", "\(size)")
    }
    if let preview, preview.utf8.count > LocalSendProtocol.Limits.maximumTextBytes {
      throw .invalid("preview", "\(preview.utf8.count) bytes")
    }
    _ = try digest()
    return self
  }
}

/// The body of `POST /api/localsend/v2/prepare-upload`.
public struct PrepareUploadRequest: Codable, Sendable {
  /// The sender, as it describes itself.
  public var info: LocalSendDevice
  /// By id.
  public var files: [String: LocalSendFile]

  /// Makes one from its fields.
  public init(info: LocalSendDevice, files: [String: LocalSendFile]) {
    self.info = info
    self.files = files
  }

  /// Checks the sender's description and every file (ids agree with their keys; at most
  /// ``LocalSendProtocol/Limits/maximumFiles``).
  ///
  /// - Throws: ``LocalSendJSONError`` naming what is wrong.
  func validated() throws(LocalSendJSONError) -> PrepareUploadRequest {
    _ = try info.validated()
    guard !files.isEmpty else { throw .invalid("files", "none") }
    guard files.count <= LocalSendProtocol.Limits.maximumFiles else {
      throw .invalid("files", "\(files.count), more than \(LocalSendProtocol.Limits.maximumFiles)")
    }
    var total: UInt64 = 0
    for (key, file) in files {
      _ = try file.validated()
      guard key == file.id else {
        throw .invalid("files", "key \(LocalSendJSON.shown(key)) names another id")
      }
      // Each size is at most 2^62; their sum must be too (the core and the prompt add them).
      let (sum, overflow) = total.addingReportingOverflow(file.size)
      guard !overflow, sum <= LocalSendProtocol.Limits.maximumFileSize else {
        throw .invalid("size", "more than 2^62 bytes in all")
      }
      total = sum
    }
    return self
  }
}

/// The answer to an accepted `prepare-upload`: the session and a token per accepted file.
public struct PrepareUploadResponse: Codable, Sendable {
  /// The session the uploads name.
  public var sessionId: String
  /// Only the files the receiver wants, by id.
  public var files: [String: String]

  /// Makes one from its fields.
  public init(sessionId: String, files: [String: String]) {
    self.sessionId = sessionId
    self.files = files
  }
}
