import Foundation
import Testing

@testable import Ferry

/// What the staging folder tells an offer about the bytes an earlier attempt left there.
@Suite("The staging folder's listings")
struct StagingAreaTests {
  let sender = try! Fingerprint(bytes: (0..<32).map { UInt8($0) })

  /// A staging area in a fresh folder, holding `bytes` bytes staged for `file`.
  func staged(_ file: TransferFile, bytes: Int) throws -> StagingArea {
    let staging = try StagingArea(destination: URL(fileURLWithPath: try scratchFolder("staging")))
    let (fd, _, _) = try staging.open(staging.name(for: file, from: sender))
    let data = [UInt8](repeating: 7, count: bytes)
    #expect(data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes)
    close(fd)
    return staging
  }

  let big = TransferFile(
    path: "big.bin", size: 1 << 30, modificationSeconds: 1_700_000_000,
    modificationNanoseconds: 5, permissions: 0o644, kind: .file)

  @Test("stale cleanup and then the survey: both listings see the staged file")
  func listedAfterCleanup() throws {
    let staging = try staged(big, bytes: 4096)
    // An offer opens its staging area, removes what is stale (one listing), then — for more
    // than 16 files — lists the folder again to see what can resume.
    #expect(staging.removeStale(olderThan: .seconds(3600)).files == 0)
    let names = try #require(staging.stagedNames())
    #expect(names.contains(staging.name(for: big, from: sender)))
    #expect(staging.stagedLength(staging.name(for: big, from: sender)) == 4096)
    // And again: each listing starts at the folder's beginning.
    #expect(staging.stagedNames() == names)
  }

  @Test("a listing past its limit is no listing (the survey then asks file by file)")
  func limit() throws {
    let staging = try staged(big, bytes: 1)
    #expect(staging.stagedNames(limit: 1) == nil)
    #expect(staging.stagedNames(limit: 10)?.count == 1)
  }
}
