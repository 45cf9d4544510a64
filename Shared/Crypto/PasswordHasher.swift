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

    public init(memoryKiB: UInt32 = 19_456, iterations: UInt32 = 2, parallelism: UInt32 = 1,
                saltLength: Int = 16, hashLength: Int = 32) {
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
        let password = Array(password.utf8)
        let length = argon2_encodedlen(iterations, memoryKiB, parallelism, UInt32(saltLength),
                                       UInt32(hashLength), Argon2_id)
        var encoded = [CChar](repeating: 0, count: length)
        let result = argon2id_hash_encoded(iterations, memoryKiB, parallelism, password, password.count,
                                           salt, salt.count, hashLength, &encoded, encoded.count)
        guard result == ARGON2_OK.rawValue else {
            throw CryptoError("Argon2id hashing", detail: String(cString: argon2_error_message(result)))
        }
        return String(decoding: encoded.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public func verify(_ password: String, against encoded: String) throws -> Bool {
        guard encoded.hasPrefix("$argon2id$") else {
            throw CryptoError("Argon2id verification", detail: "not an argon2id hash")
        }
        let password = Array(password.utf8)
        let result = argon2id_verify(encoded, password, password.count)
        if result == ARGON2_OK.rawValue { return true }
        if result == ARGON2_VERIFY_MISMATCH.rawValue { return false }
        throw CryptoError("Argon2id verification", detail: String(cString: argon2_error_message(result)))
    }

    public func needsRehash(_ encoded: String) -> Bool {
        // $argon2id$v=19$m=…,t=…,p=…$salt$hash
        let fields = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard fields.count == 6, fields[1] == "argon2id", fields[2] == "v=19" else { return true }
        guard fields[3] == parameters else { return true }
        return Base64.decoded(fields[4])?.count != saltLength || Base64.decoded(fields[5])?.count != hashLength
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
        let hasher = hasher
        return try await pool.run { try hasher.hash(password) }
    }

    /// See ``PasswordHasher/verify(_:against:)``.
    public func verify(_ password: String, against encoded: String) async throws -> Bool {
        let hasher = hasher
        return try await pool.run { try hasher.verify(password, against: encoded) }
    }

    /// See ``PasswordHasher/needsRehash(_:)``.
    public func needsRehash(_ encoded: String) -> Bool { hasher.needsRehash(encoded) }

    /// Stops the hashing threads once their queue is empty.
    public func shutdown() { pool.shutdown() }
}
