import Foundation
import Testing

@testable import FerryLocalSend

/// File times as the sender writes them into an offer, and as a receiver reads them back.
@Suite("LocalSend file times")
struct LocalSendTimeTests {
  @Test(
    "written as ISO8601DateFormatter writes them with milliseconds, and read back to the millisecond",
    arguments: [
      (0, 0), (1_764_271_805, 123_456_789), (951_782_400, 999_999_999), (-86_400, 500_000_000),
      (253_402_300_799, 0), (1_700_000_000, 1_000_000),
    ] as [(Int, Int)])
  func roundTrip(seconds: Int, nanoseconds: Int) throws {
    let time = timespec(tv_sec: seconds, tv_nsec: nanoseconds)
    let text = try #require(LocalSendTime.string(time))
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    let date = Date(
      timeIntervalSince1970: Double(seconds) + Double(nanoseconds / 1_000_000) / 1000)
    #expect(text == formatter.string(from: date))
    let read = try #require(LocalSendTime.parse(text))
    #expect(read.seconds == Int64(seconds))
    #expect(read.nanoseconds == UInt32(nanoseconds / 1_000_000 * 1_000_000))
  }

  @Test("read to the nanosecond, with any zone, as RFC 3339 allows it")
  func reads() throws {
    let cases: [(String, Int64, UInt32)] = [
      ("2024-02-29T23:59:59.123456789+01:00", 1_709_247_599, 123_456_789),
      ("2024-02-29t22:59:59.123456789z", 1_709_247_599, 123_456_789),
      ("2024-02-29 22:59:59Z", 1_709_247_599, 0),
      ("2024-02-29T22:59:60.5Z", 1_709_247_599, 500_000_000),
      ("1969-12-31T19:00:00.000000000123-05:00", 0, 0),
      ("0000-01-01T00:00:00Z", -62_167_219_200, 0),
    ]
    for (text, seconds, nanoseconds) in cases {
      let read = try #require(LocalSendTime.parse(text), "\(text)")
      #expect(read.seconds == seconds, "\(text)")
      #expect(read.nanoseconds == nanoseconds, "\(text)")
    }
  }

  @Test("anything else is not a time: the receiver then uses now")
  func refuses() {
    for text in [
      "2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-04-31T00:00:00Z",
      "2024-01-01T24:00:00Z", "2024-01-01T00:60:00Z", "2024-01-01T00:00:61Z",
      "2024-01-01T00:00:00", "2024-01-01T00:00:00.Z", "2024-01-01T00:00:00+1:00",
      "2024-01-01T00:00:00+24:00", "2024-01-01T00:00:00Z ", "2024-01-01T00:00:00ZZ",
      "２024-01-01T00:00:00Z", "2024-01-01T00:00:00\u{0}Z", "-2024-01-01T00:00:00Z",
      "2024-1-01T00:00:00Z", "", "2024-01-01T00:00:00." + String(repeating: "9", count: 50) + "Z",
    ] {
      #expect(LocalSendTime.parse(text) == nil, "\(text.debugDescription)")
    }
    let now = Int64(Date().timeIntervalSince1970)
    #expect(abs(LocalSendOffers.modification("9999-12-31T23:59:59Z").0 - now) < 5)
    #expect(abs(LocalSendOffers.modification(nil).0 - now) < 5)
    #expect(LocalSendOffers.modification("2024-02-29T22:59:59.5Z") == (1_709_247_599, 500_000_000))
  }

  @Test("the first moment of year 0, the last of 9999 and the last before 1970 are written")
  func bounds() {
    #expect(
      LocalSendTime.string(timespec(tv_sec: -62_167_219_200, tv_nsec: 0))
        == "0000-01-01T00:00:00.000Z")
    #expect(
      LocalSendTime.string(timespec(tv_sec: 253_402_300_799, tv_nsec: 999_999_999))
        == "9999-12-31T23:59:59.999Z")
    #expect(
      LocalSendTime.string(timespec(tv_sec: -1, tv_nsec: 0)) == "1969-12-31T23:59:59.000Z")
    #expect(
      LocalSendTime.string(timespec(tv_sec: 1_483_228_800, tv_nsec: 0))
        == "2017-01-01T00:00:00.000Z")
  }

  @Test("a year outside 0...9999 is left out rather than written wrong")
  func outOfRange() {
    #expect(LocalSendTime.string(timespec(tv_sec: 253_402_300_800, tv_nsec: 0)) == nil)
    #expect(LocalSendTime.string(timespec(tv_sec: -62_200_000_000, tv_nsec: 0)) == nil)
    #expect(LocalSendTime.string(timespec(tv_sec: -62_167_219_201, tv_nsec: 0)) == nil)
    #expect(LocalSendTime.string(timespec(tv_sec: .max, tv_nsec: 0)) == nil)
    #expect(LocalSendTime.string(timespec(tv_sec: .min, tv_nsec: 0)) == nil)
  }
}
