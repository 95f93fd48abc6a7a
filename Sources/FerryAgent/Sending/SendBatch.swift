import Ferry
import Foundation

/// What one send offers: its entries (files and folders), walked once to announce them
/// (``summary``: the receiver's one prompt) and again, part by part, to send them. A batch of
/// any size goes as consecutive offers of at most ``partSize`` files, so that neither end holds
/// more than a part's files at once, whatever the tree.
public struct SendBatch: Sendable {
  /// The checked entries (``checked(_:)``).
  public let entries: [ResourceItem]
  /// What the invitation announces.
  public let summary: OfferSummary
  /// The files the first walk found, when they are one part: sent as they are, without a
  /// second walk (a batch of more is walked again, part by part, in bounded memory).
  private let walked: [ResourceItem]?
  /// What the first walk left out because it could not be read.
  private let unreadable: Int

  /// The most files in one offer of the batch: large enough that the round trip between parts
  /// is lost in the data, small enough that a part's bookkeeping stays a few megabytes. Tests
  /// make it smaller (`FERRY_TEST_PART_FILES`) to cross parts with a few files.
  public static let partSize: Int = {
    let test = ProcessInfo.processInfo.environment["FERRY_TEST_PART_FILES"].flatMap { Int($0) }
    guard let test, (1...ProtocolLimits.maximumFilesPerOffer).contains(test) else { return 10_000 }
    return test
  }()

  /// Walks `entries` to sum them up; what a folder holds besides files and folders, and what
  /// in it cannot be read, is left out and reported to `skipped` (``Parts`` leaves it out
  /// again, and counts what it could not read).
  ///
  /// - Throws: ``SendFailure`` for an unreadable entry, a path the receiver would refuse, more
  ///   than 2^62 bytes in all, or nothing to send.
  public init(entries: [ResourceItem], skipped: (ResourceItem.Skipped) -> Void)
    throws(SendFailure)
  {
    var builder = OfferSummary.Builder()
    var walk = ResourceWalk(entries, skippingUnreadable: true)
    var unreadable = 0
    var walked: [ResourceItem]? = []
    do {
      while let found = try walk.next(skipped: {
        if $0.unreadable { unreadable += 1 }
        skipped($0)
      }) {
        if walked != nil {
          walked?.append(found.item)
          if walked!.count > Self.partSize { walked = nil }
        }
        builder.add(
          found.item.path, size: found.size, isFolder: found.item.isFolder,
          isStreamed: found.item.isStreamed)
        guard builder.totalBytes <= ProtocolLimits.maximumOfferBytes else {
          throw SendFailure(
            .tooLarge(DisplayText.escaping(found.item.url.path) + " (with the files before it)"))
        }
      }
    } catch let error as ResourceError {
      throw SendFailure(error)
    } catch let error as SendFailure {
      throw error
    } catch {
      throw SendFailure(.cannotRead, "\(error)")
    }
    let summary = builder.summary
    // Empty folders are sent too: only entries that name nothing at all leave nothing — or
    // folders whose every file was left out unreadable: asking for empty shells would be a yes
    // to nothing the user meant.
    guard summary.entries > 0, unreadable == 0 || summary.files > 0 else {
      let why =
        unreadable > 0 ? " (left out: \(Quantity.count(unreadable, "unreadable path")))" : ""
      throw SendFailure(.nothingToSend, "nothing to send\(why)")
    }
    self.entries = entries
    self.summary = summary
    self.walked = walked
    self.unreadable = unreadable
  }

  /// The batch's parts: the files the first walk found, or a walk again from the start.
  public func parts() -> Parts {
    Parts(
      walk: ResourceWalk(entries, skippingUnreadable: true), walked: walked,
      unreadable: walked == nil ? 0 : unreadable, announced: summary.entries)
  }

  /// The batch's files, ``SendBatch/partSize`` at a time.
  public struct Parts {
    fileprivate var walk: ResourceWalk
    /// The batch's one part, found already; nil once handed out, or when the batch is walked.
    fileprivate var walked: [ResourceItem]?
    /// Files and folders left out so far because they could not be read: the batch is partial.
    public fileprivate(set) var unreadable = 0
    fileprivate let announced: Int
    /// Files and empty folders handed out so far.
    public private(set) var files = 0

    /// The next part, or nil when the batch is all sent.
    ///
    /// - Throws: ``SendFailure`` when a file or folder can no longer be read, or the folders
    ///   now hold more files than were announced (the receiver would not take them as the
    ///   batch it said yes to).
    public mutating func next() throws(SendFailure) -> [ResourceItem]? {
      if let part = walked {
        walked = []
        files += part.count
        return part.isEmpty ? nil : part
      }
      var part: [ResourceItem] = []
      var leftOut = 0
      do {
        while part.count < SendBatch.partSize,
          let found = try walk.next(skipped: { if $0.unreadable { leftOut += 1 } })
        {
          part.append(found.item)
        }
      } catch {
        throw SendFailure(error)
      }
      unreadable += leftOut
      files += part.count
      guard files <= announced else {
        throw SendFailure(
          .batchChanged,
          "the folders changed while they were being sent: they now hold more than "
            + "the \(Quantity.count(announced, "file")) announced; send them again")
      }
      return part.isEmpty ? nil : part
    }
  }

  /// `entries` (files and folders) checked against each other as the receiver will check their
  /// paths; the same file or folder under the same path twice is kept once.
  ///
  /// - Throws: ``SendFailure`` for an unsafe or clashing name, an unreadable path.
  public static func checked(_ entries: [ResourceItem]) throws(SendFailure) -> [ResourceItem] {
    var kept: [ResourceItem] = []
    var paths: [RelativePath] = []
    var identities: [String: (device: UInt64, inode: UInt64)] = [:]
    for entry in entries {
      var status = stat()
      guard stat(entry.url.path, &status) == 0 else {
        throw SendFailure(
          .cannotRead,
          "cannot read \(DisplayText.escaping(entry.url.path)): \(systemWords(errno))")
      }
      let identity = (device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
      if let earlier = identities[entry.path] {
        if earlier == identity { continue }  // The same file, named twice.
        throw SendFailure(.unsafePath(.duplicate(DisplayText.escaping(entry.path))))
      }
      identities[entry.path] = identity
      do {
        paths.append(try RelativePath(validating: entry.path))
        kept.append(entry)
      } catch {
        throw SendFailure(.unsafePath(error))
      }
    }
    do {
      try RelativePath.checkTree(paths)
    } catch {
      throw SendFailure(.unsafePath(error))
    }
    return kept
  }
}
