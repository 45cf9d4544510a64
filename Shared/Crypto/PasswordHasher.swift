import CArgon2
import PierRuntime

/// Hashes and verifies passwords; encoded hashes carry their own parameters (PHC strings), so
/// parameters can change and old hashes still verify. A protocol so that OpenSSL's own Argon2
/// (3.2+) can replace libargon2 without touching callers.
public protocol PasswordHasher: Sendable {
    /// A new encoded hash of `password` with a fresh random salt.
    func hash(_ password: String) throws -> String
    /// True when `password` matches `encoded`; throws on a malformed hash.
    func verify(_ password: String, against encoded: String) throws -> Bool
    /// True when `encoded` was made with other parameters than the current ones.
    func needsRehash(_ encoded: String) -> Bool
    /// Frees working memory that the calling thread keeps between hashes, if any.
    func releaseThreadMemory()
}

extension PasswordHasher {
    public func releaseThreadMemory() {}
}

/// Argon2id (RFC 9106) through libargon2, the reference implementation.
public struct Argon2idHasher: PasswordHasher {
    /// Memory in KiB; default 19,456 (19 MiB), OWASP's minimum.
    public var memoryKiB: UInt32
    /// Passes over memory; default 2.
    public var iterations: UInt32
    /// Lanes; default 1.
    public var parallelism: UInt32
    /// Salt bytes; default 16.
    public var saltLength: Int
    /// Hash bytes; default 32.
    public var hashLength: Int

    public init(
        memoryKiB: UInt32 = 19_456, iterations: UInt32 = 2, parallelism: UInt32 = 1,
        saltLength: Int = 16, hashLength: Int = 32
    ) {
        self.memoryKiB = memoryKiB
        self.iterations = iterations
        self.parallelism = parallelism
        self.saltLength = saltLength
        self.hashLength = hashLength
    }

    /// The PHC parameter segment this hasher writes, e.g. `m=19456,t=2,p=1`.
    public var parameters: String { "m=\(memoryKiB),t=\(iterations),p=\(parallelism)" }

    public func hash(_ password: String) throws -> String {
        let salt = SecureRandom.bytes(saltLength)
        let digest = try Argon2idHasher.derive(
            password, salt: salt, memoryKiB: memoryKiB, iterations: iterations,
            parallelism: parallelism, length: hashLength)
        return "$argon2id$v=19$\(parameters)$" + Base64.encoded(salt, padding: false) + "$"
            + Base64.encoded(digest, padding: false)
    }

    public func verify(_ password: String, against encoded: String) throws -> Bool {
        guard let phc = PHCString(encoded) else {
            throw CryptoError("Argon2id verification", detail: "not a valid argon2id PHC string")
        }
        let digest = try Argon2idHasher.derive(
            password, salt: phc.salt, memoryKiB: phc.memoryKiB, iterations: phc.iterations,
            parallelism: phc.parallelism, length: phc.hash.count)
        return constantTimeEquals(digest, phc.hash)
    }

    public func needsRehash(_ encoded: String) -> Bool {
        guard let phc = PHCString(encoded) else { return true }
        return phc.memoryKiB != memoryKiB || phc.iterations != iterations || phc.parallelism != parallelism
            || phc.salt.count != saltLength || phc.hash.count != hashLength
    }

    public func releaseThreadMemory() { CArgon2_release_thread_memory() }

    static func derive(
        _ password: String, salt: [UInt8], memoryKiB: UInt32, iterations: UInt32, parallelism: UInt32,
        length: Int
    ) throws -> [UInt8] {
        let password = Array(password.utf8)
        var digest = [UInt8](repeating: 0, count: length)
        let result = CArgon2_argon2id(
            iterations, memoryKiB, parallelism, password, password.count, salt, salt.count,
            &digest, digest.count)
        guard result == ARGON2_OK.rawValue else {
            throw CryptoError("Argon2id", detail: String(cString: argon2_error_message(result)))
        }
        return digest
    }
}

/// `$argon2id$v=19$m=…,t=…,p=…$salt$hash`, parsed strictly.
struct PHCString {
    let memoryKiB: UInt32
    let iterations: UInt32
    let parallelism: UInt32
    let salt: [UInt8]
    let hash: [UInt8]

    init?(_ encoded: String) {
        let fields = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 6, fields[0].isEmpty, fields[1] == "argon2id", fields[2] == "v=19" else { return nil }
        var values: [Substring: UInt32] = [:]
        for pair in fields[3].split(separator: ",") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let value = UInt32(parts[1]) else { return nil }
            values[parts[0]] = value
        }
        guard values.count == 3, let m = values["m"], let t = values["t"], let p = values["p"],
            let salt = Base64.decoded(fields[4]), let hash = Base64.decoded(fields[5]),
            salt.count >= 8, hash.count >= 4, t >= 1, p >= 1, m >= 8 * p, m <= 4_194_304
        else { return nil }
        memoryKiB = m
        iterations = t
        parallelism = p
        self.salt = salt
        self.hash = hash
    }
}

/// Runs a ``PasswordHasher`` on its own threads: at most one hash per core at a time and a
/// bounded queue, so a flood of logins costs waiting time (then 503), never unbounded memory.
public final class BoundedPasswordHasher: Sendable {
    public let hasher: any PasswordHasher
    private let pool: BlockingPool

    /// - Parameters:
    ///   - threads: hashes running at once; default: the number of cores.
    ///   - queueLimit: hashes waiting; beyond it calls fail with `BlockingPool.Overloaded`.
    public init(hasher: any PasswordHasher, threads: Int, queueLimit: Int) {
        self.hasher = hasher
        self.pool = BlockingPool(name: "password hashing", threads: threads, queueLimit: queueLimit)
    }

    /// See ``PasswordHasher/hash(_:)``.
    public func hash(_ password: String) async throws -> String {
        try await run { try $0.hash(password) }
    }

    /// See ``PasswordHasher/verify(_:against:)``.
    public func verify(_ password: String, against encoded: String) async throws -> Bool {
        try await run { try $0.verify(password, against: encoded) }
    }

    /// Runs on a hashing thread; the thread keeps its working memory while more hashes wait
    /// (a burst of logins pays no page faults) and frees it when the queue is empty.
    private func run<T: Sendable>(_ body: @escaping @Sendable (any PasswordHasher) throws -> T) async throws -> T {
        let hasher = hasher
        let pool = pool
        return try await pool.run {
            defer { if pool.waiting == 0 { hasher.releaseThreadMemory() } }
            return try body(hasher)
        }
    }

    /// See ``PasswordHasher/needsRehash(_:)``.
    public func needsRehash(_ encoded: String) -> Bool { hasher.needsRehash(encoded) }

    /// Stops the hashing threads once their queue is empty.
    public func shutdown() { pool.shutdown() }
}
