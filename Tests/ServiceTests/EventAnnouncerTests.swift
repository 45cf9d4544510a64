import Foundation
import PierEvents
import PierPostgres
import PierTestSupport
import Testing

@testable import PierService

/// A hot producer's events wake their followers after the commit, many to a notification: a
/// burst of items makes a few notifications, and the last item's is never left for a poll.
@Suite struct EventAnnouncerTests {
    @Test func aBurstMakesAFewNotificationsAndTheLastIsNeverLeftForAPoll() async throws {
        let (pool, listener) = try await TestDatabase.listening("pier_test_announcer", channel: EventLog.channel, poolSize: 2)
        defer {
            listener.stop()
            pool.close()
        }
        let type: Set<String> = ["test.created"]
        let announcer = EventAnnouncer(database: pool, listener: listener)
        func sent() -> Int { listener.notifiedWork.counts.statements }

        // 2,000 items from 8 requests at once.
        let (received, statements) = (listener.generation(of: type), sent())
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<250 { announcer.announce("test.created") } }
            }
        }
        // Every notification sent arrives, and they are few.
        #expect(await eventually { sent() > statements && listener.generation(of: type) - received == sent() - statements })
        let burst = listener.generation(of: type) - received
        print("2000 announcements, \(burst) notifications")
        #expect(burst >= 1 && burst <= 200, "\(burst) notifications for 2000 announcements")

        // Quiet again, one item is notified at once, by one notification.
        #expect(await eventually { listener.generation(of: type) - received == sent() - statements })
        let (before, statementsBefore) = (listener.generation(of: type), sent())
        announcer.announce("test.created")
        #expect(await eventually { listener.generation(of: type) == before + 1 })
        #expect(await eventually { sent() == statementsBefore + 1 })
        #expect(listener.generation(of: type) == before + 1)
    }
}
