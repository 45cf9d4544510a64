import PierTestBasics
import Synchronization
import Testing

@testable import PierRuntime

/// Inputs asked for at once are done in batches, each caller answered with its own output.
@Suite struct CoalescerTests {
    struct Failed: Error, Equatable { let input: Int }

    /// A perform that holds every batch until the test opens the gate, and records the batches.
    final class Gate: Sendable {
        let open = Atomic<Bool>(false)
        let batches = Locked<[[Int]]>([])

        func perform(_ inputs: [Int]) async -> [Result<Int, any Error>] {
            batches.withLock { $0.append(inputs) }
            while !open.load(ordering: .acquiring) { try? await Task.sleep(for: .milliseconds(5)) }
            return inputs.map { $0 % 7 == 0 ? .failure(Failed(input: $0)) : .success($0 * 10) }
        }
    }

    @Test func callersWhileTheLanesAreBusyShareABatch() async throws {
        let gate = Gate()
        let coalescer = Coalescer<Int, Int>(lanes: 2, limit: 16) { await gate.perform($0) }
        let outcomes = Task {
            try await concurrently(40) { input -> (Int, Result<Int, Failed>) in
                do { return (input, .success(try await coalescer.run(input))) } catch let error as Failed {
                    return (input, .failure(error))
                }
            }
        }
        // Two lanes hold one input each; the other 38 wait for them.
        #expect(await eventually { coalescer.waiting == 38 })
        gate.open.store(true, ordering: .releasing)
        let answers = try await outcomes.value

        #expect(answers.count == 40)
        for (input, answer) in answers {
            #expect(answer == (input % 7 == 0 ? .failure(Failed(input: input)) : .success(input * 10)))
        }
        let batches = gate.batches.withLock { $0 }
        // Every input once; the first two alone, the queue in batches of at most 16.
        #expect(batches.flatMap { $0 }.sorted() == Array(0..<40))
        #expect(batches.prefix(2).allSatisfy { $0.count == 1 })
        #expect(batches.allSatisfy { $0.count <= 16 })
        #expect(batches.count == 2 + 3)
        #expect(coalescer.waiting == 0)
    }

    /// With a lane free, an input is done at once and alone: no wait for company.
    @Test func aLoneCallerRunsAlone() async throws {
        let gate = Gate()
        gate.open.store(true, ordering: .releasing)
        let coalescer = Coalescer<Int, Int>(lanes: 1, limit: 16) { await gate.perform($0) }
        for input in 1...3 { #expect(try await coalescer.run(input) == input * 10) }
        #expect(gate.batches.withLock { $0 } == [[1], [2], [3]])
    }
}
