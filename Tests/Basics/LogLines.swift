import Synchronization

/// Every line a logger under test wrote, in order.
public final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    public init() {}
    public func append(_ line: String) { lines.withLock { $0.append(line) } }
    public var all: [String] { lines.withLock { $0 } }
}
