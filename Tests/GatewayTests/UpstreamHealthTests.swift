import PierRuntime
import Testing

@testable import Gateway

/// Active health: one failed `/readyz` check (a slow answer on a busy machine) keeps a healthy
/// upstream in; two in a row take it out; one that passes brings it back at once.
@Suite struct UpstreamHealthTests {
    @Test func twoFailedChecksInARowTakeAnUpstreamOut() {
        let upstream = Upstream(base: "http://127.0.0.1:9", route: "/svc")
        let now = MonotonicClock.seconds()
        #expect(upstream.checked(passed: false) && upstream.isAvailable(at: now))
        #expect(upstream.checked(passed: true))
        #expect(upstream.checked(passed: false) && upstream.isAvailable(at: now))
        #expect(!upstream.checked(passed: false) && !upstream.isAvailable(at: now))
        #expect(upstream.checked(passed: true) && upstream.isAvailable(at: now))
    }
}
