import PierRuntime
import PierService

/// A host's parts running beside a test, which keeps its own thread of work: the group runs in a
/// task of its own until ``shutdown()``. Its members are the running host's.
@dynamicMemberLookup
public struct Hosted: Sendable {
    public let running: PluginHost.Running
    private let task: Task<ServiceGroup.Reason, any Error>

    /// Runs `running` until ``shutdown()``.
    public init(_ running: PluginHost.Running) {
        self.running = running
        task = Task { try await running.run() }
    }

    public subscript<T>(dynamicMember member: KeyPath<PluginHost.Running, T>) -> T { running[keyPath: member] }

    /// Stops it as a signal stops the process, and waits until every part has stopped.
    public func shutdown() async {
        running.stop()
        _ = try? await task.value
    }
}
