import Ferry
import Testing

/// Sizes and counts as people read them, at every boundary.
@Suite("Quantity: bytes and counts in words")
struct QuantityTests {
  @Test(
    "bytes in decimal units, singular at 1, never '1000 KB'",
    arguments: [
      (UInt64(0), "0 bytes"), (1, "1 byte"), (999, "999 bytes"), (1000, "1.0 KB"),
      (1049, "1.0 KB"), (9_949, "9.9 KB"), (9_950, "10 KB"), (999_499, "999 KB"),
      (999_500, "1.0 MB"), (300_000, "300 KB"), (3_200_000_000, "3.2 GB"),
      (10 << 40, "11 TB"), (UInt64.max, "18 EB"),
    ])
  func bytes(value: UInt64, text: String) {
    #expect(Quantity.bytes(value) == text)
  }

  @Test("counts: 0 files, 1 file, 2 files")
  func counts() {
    #expect(Quantity.count(0, "file") == "0 files")
    #expect(Quantity.count(1, "file") == "1 file")
    #expect(Quantity.count(2, "hidden file") == "2 hidden files")
  }
}
