import Testing

@testable import FerryLocalSend

/// What a LocalSend peer's JSON may hold: every field's largest, smallest, negative, wrong and
/// repeated values refused with a clear error, never a trap.
@Suite("LocalSend JSON from peers")
struct LocalSendJSONTests {
  func request(_ files: String, info: String? = nil) -> [UInt8] {
    let device =
      info
      ?? #"{"alias":"a","version":"2.2","fingerprint":"AB","deviceType":"mobile","port":53317}"#
    return Array(#"{"info":\#(device),"files":\#(files)}"#.utf8)
  }

  func decode(_ bytes: [UInt8]) throws(LocalSendJSONError) -> PrepareUploadRequest {
    try LocalSendJSON.decode(PrepareUploadRequest.self, from: bytes).validated()
  }

  @Test(
    "sizes out of range, bad digests, ids that disagree, no files, long fields: refused",
    arguments: [
      #"{"x":{"id":"x","fileName":"a","size":-1,"fileType":"t"}}"#,
      #"{"x":{"id":"x","fileName":"a","size":18446744073709551616,"fileType":"t"}}"#,
      #"{"x":{"id":"x","fileName":"a","size":4611686018427387905,"fileType":"t"}}"#,
      #"{"x":{"id":"x","fileName":"a","size":1,"fileType":"t","sha256":"zz"}}"#,
      #"{"x":{"id":"y","fileName":"a","size":1,"fileType":"t"}}"#,
      #"{"x":{"id":"x","fileName":"","size":1,"fileType":"t"}}"#,
      #"{}"#,
      #"[]"#,
      #"{"x":{"id":"x","fileName":"a","size":1.5,"fileType":"t"}}"#,
      // Each within 2^62, together not: the prompt and the core add them.
      #"{"x":{"id":"x","fileName":"a","size":4611686018427387904,"fileType":"t"},"#
        + #""y":{"id":"y","fileName":"b","size":4611686018427387904,"fileType":"t"}}"#,
      #"{"x":{"id":"x","fileName":"a","size":4611686018427387904,"fileType":"t"},"#
        + #""y":{"id":"y","fileName":"b","size":1,"fileType":"t"}}"#,
    ])
  func refused(files: String) {
    #expect(throws: LocalSendJSONError.self) { try decode(request(files)) }
  }

  @Test("a device's port out of range or an unknown protocol is refused")
  func device() {
    for info in [
      #"{"alias":"a","version":"2.2","fingerprint":"AB","port":0}"#,
      #"{"alias":"a","version":"2.2","fingerprint":"AB","port":65536}"#,
      #"{"alias":"a","version":"2.2","fingerprint":"AB","protocol":"ftp"}"#,
      #"{"alias":"\#(String(repeating: "x", count: 300))","version":"2.2","fingerprint":"AB"}"#,
      #"{"alias":"a","version":"2.2","fingerprint":""}"#,
    ] {
      #expect(throws: LocalSendJSONError.self) {
        try decode(request(#"{"x":{"id":"x","fileName":"a","size":1,"fileType":"t"}}"#, info: info))
      }
    }
  }

  @Test("more than 4 MiB of JSON is refused before it is parsed")
  func tooLarge() {
    let bytes = [UInt8](repeating: UInt8(ascii: " "), count: (4 << 20) + 1)
    #expect(throws: LocalSendJSONError.tooLarge((4 << 20) + 1)) {
      try LocalSendJSON.decode(PrepareUploadRequest.self, from: bytes)
    }
  }

  @Test("a valid request decodes, its digest as 32 bytes")
  func valid() throws {
    let digest = String(repeating: "0f", count: 32)
    let parsed = try decode(
      request(
        #"{"x":{"id":"x","fileName":"a/b.txt","size":5,"fileType":"t","sha256":"\#(digest)"}}"#))
    #expect(try parsed.files["x"]?.digest() == [UInt8](repeating: 0x0f, count: 32))
  }
}
