import Testing

@testable import PierCrypto

@Suite struct PasswordHasherTests {
    let cheap = Argon2idHasher(memoryKiB: 1024, iterations: 1)

    @Test func verifiesTheReferenceImplementationVector() throws {
        // From libargon2's own test suite (m=65536, t=2, p=1, password "password", salt "somesalt").
        let encoded = "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
        #expect(try Argon2idHasher().verify("password", against: encoded))
        #expect(try !Argon2idHasher().verify("passwort", against: encoded))
    }

    @Test func hashesAsPHCStringsWithOWASPDefaults() throws {
        let hasher = Argon2idHasher()
        let encoded = try hasher.hash("correct horse battery staple")
        #expect(encoded.hasPrefix("$argon2id$v=19$m=19456,t=2,p=1$"))
        #expect(try hasher.verify("correct horse battery staple", against: encoded))
        #expect(try !hasher.verify("correct horse battery stapler", against: encoded))
        #expect(!hasher.needsRehash(encoded))
        #expect(try hasher.hash("same") != hasher.hash("same"))  // fresh salt each time
    }

    @Test func unicodePasswordsAndParameterChanges() throws {
        let encoded = try cheap.hash("pässwörd 🔑 كلمة")
        #expect(try cheap.verify("pässwörd 🔑 كلمة", against: encoded))
        #expect(Argon2idHasher().needsRehash(encoded))
        // An old hash still verifies under new settings: the parameters travel with the hash.
        #expect(try Argon2idHasher().verify("pässwörd 🔑 كلمة", against: encoded))
    }

    @Test func malformedHashesThrow() {
        #expect(throws: CryptoError.self) { try cheap.verify("x", against: "$argon2id$v=19$garbage") }
        #expect(throws: CryptoError.self) { try cheap.verify("x", against: "$2b$12$bcrypt") }
    }

    @Test func boundedHasherRefusesBeyondItsQueue() async throws {
        let slow = BoundedPasswordHasher(hasher: Argon2idHasher(memoryKiB: 8192, iterations: 3), threads: 1, queueLimit: 1)
        defer { slow.shutdown() }
        let results = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<6 {
                group.addTask { (try? await slow.hash("password")) != nil }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.contains(true))
        #expect(results.contains(false))
    }
}
