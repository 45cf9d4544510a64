#if canImport(Glibc)
    import Glibc
#endif

/// Starts a detached OS thread running `body` (dedicated pools and listeners: work that must
/// never occupy a thread of Swift's cooperative pool).
public func startDetachedThread(_ body: @escaping @Sendable () -> Void) {
    final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var thread = pthread_t()
    let context = Unmanaged.passRetained(Box(body)).toOpaque()
    let result = pthread_create(
        &thread, nil,
        { context in
            Unmanaged<Box>.fromOpaque(context!).takeRetainedValue().body()
            return nil
        }, context)
    precondition(result == 0, "pthread_create failed: \(result)")
    pthread_detach(thread)
}
