import Synchronization

/// Whether an early write-back of an offer runs now (``OfferDisk/writingBack``): shared
/// with the queue that runs it.
final class WriteBackFlag: Sendable {
  private let value = Atomic<Bool>(false)

  /// Claims the flag: true when it was free (this caller runs the write-back).
  func claim() -> Bool {
    !value.exchange(true, ordering: .acquiringAndReleasing)
  }

  /// Frees the flag.
  func release() {
    value.store(false, ordering: .releasing)
  }
}
