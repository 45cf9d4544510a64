// The reference for login throughput: the bare KDF, same parameters, same threads.
// Usage: pier-kdf-bench <threads> <seconds> [memoryKiB iterations parallelism]
// Prints hashes per second (verifications of one stored hash, which is what a login does).
import Dispatch
import Glibc
import PierCrypto
import PierRuntime
import Synchronization

let arguments = CommandLine.arguments
let threads = arguments.count > 1 ? Int(arguments[1]) ?? 2 : 2
let seconds = arguments.count > 2 ? Double(arguments[2]) ?? 10 : 10
let hasher = Argon2idHasher(
    memoryKiB: arguments.count > 3 ? UInt32(arguments[3]) ?? 19_456 : 19_456,
    iterations: arguments.count > 4 ? UInt32(arguments[4]) ?? 2 : 2,
    parallelism: arguments.count > 5 ? UInt32(arguments[5]) ?? 1 : 1)
let encoded = try hasher.hash("bench passphrase 1")
let done = Atomic<Int>(0)
let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
let group = DispatchGroup()
for _ in 0..<threads {
    group.enter()
    startDetachedThread {
        while DispatchTime.now().uptimeNanoseconds < deadline {
            _ = try? hasher.verify("bench passphrase 1", against: encoded)
            done.add(1, ordering: .relaxed)
        }
        group.leave()
    }
}
group.wait()
print((Double(done.load(ordering: .relaxed)) / seconds * 10).rounded() / 10)
