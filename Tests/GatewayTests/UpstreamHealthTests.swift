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

    /// The checks are a preference: a route whose every upstream failed them still tries them
    /// (panic routing), so checks that fail while the service answers never refuse its routes.
    @Test func aRouteWithNoHealthyUpstreamTriesThemAll() {
        let (one, two) = (Upstream(base: "http://one", route: "/svc"), Upstream(base: "http://two", route: "/svc"))
        let balancer = Balancer(upstreams: [one, two], balance: .roundRobin)
        for _ in 0..<2 { one.checked(passed: false) }
        // One healthy: only it, and nothing once it was tried.
        #expect((0..<4).allSatisfy { _ in balancer.choose(excluding: [])?.base == "http://two" })
        #expect(balancer.choose(excluding: ["http://two"]) == nil)
        // None healthy: each in turn, until every one was tried.
        for _ in 0..<2 { two.checked(passed: false) }
        #expect(!balancer.hasAvailable())
        #expect(Set((0..<4).compactMap { _ in balancer.choose(excluding: [])?.base }) == ["http://one", "http://two"])
        #expect(balancer.choose(excluding: ["http://one"])?.base == "http://two")
        #expect(balancer.choose(excluding: ["http://one", "http://two"]) == nil)
    }
}
