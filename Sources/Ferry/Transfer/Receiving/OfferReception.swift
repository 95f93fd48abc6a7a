/// How an incoming offer gets its answer.
package enum OfferReception: Sendable {
  /// Accepted into these options as soon as its paths are checked.
  case automatic(ReceiveOptions)
  /// Handed to `deliver` as a ``ResourceOffer`` for the application to answer; `question`
  /// counts it against its link until the application lets go of it (or, refused for its
  /// paths, it is never asked).
  case asking(OpenQuestions.Question, deliver: @Sendable (ResourceOffer) -> Void)
}
