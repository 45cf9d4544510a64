import Testing

@testable import PierRuntime

/// The clock that ejections, token buckets and deadlines count with.
@Suite struct MonotonicClockTests {
    /// Readings are never negative (the first one in a process was, when the origin was set
    /// after the time it was compared with) and never go back.
    @Test func readingsStartAtZeroAndNeverGoBack() {
        var last = MonotonicClock.seconds()
        #expect(last >= 0)
        for _ in 0..<10_000 {
            let now = MonotonicClock.seconds()
            #expect(now >= last)
            last = now
        }
    }
}
