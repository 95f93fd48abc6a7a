/// Carries a value the application handed over (a completion handler, which Apple's
/// signatures do not mark `@Sendable`) to the object's queue, where alone it is used.
struct UncheckedBox<Value>: @unchecked Sendable {
  let value: Value

  init(_ value: Value) {
    self.value = value
  }
}
