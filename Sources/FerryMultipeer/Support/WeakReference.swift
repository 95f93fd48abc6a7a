/// A weak reference that crosses threads: to a delegate (a class-bound existential) or to one
/// of the Foundation streams, which are not `Sendable` and guard their state with their own
/// lock. `Object` must be a class type or a class-bound protocol.
struct WeakReference<Object>: @unchecked Sendable {
  private weak var stored: AnyObject?

  init(_ object: Object) {
    stored = object as AnyObject
  }

  /// The object, nil once released.
  var object: Object? {
    stored as? Object
  }
}
