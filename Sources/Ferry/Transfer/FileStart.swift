/// Where the receiver has one offered file start, in its answer to the offer: left out, sent
/// from an offset (0: whole; more: a resume of what an earlier attempt staged), or held (the
/// receiver has a copy with the offered size and time: its digest comes first, and the file
/// itself only if the receiver's verdict is ``FileVerdict/differs``). A value: used on any
/// thread.
package enum FileStart: Hashable, Sendable {
  /// Left out: nothing of it is sent.
  case skip
  /// Sent from this offset (its size: nothing left to send but its end).
  case from(UInt64)
  /// Held by the receiver: its digest first.
  case held
}
