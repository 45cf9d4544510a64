import COpenSSL

/// Cryptographically secure random bytes from OpenSSL's DRBG.
public enum SecureRandom {
    /// Returns `count` random bytes. OpenSSL's DRBG failing is unrecoverable (no entropy), so it
    /// stops the process rather than hand out predictable bytes.
    public static func bytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return bytes }
        let result = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        precondition(result == 1, "RAND_bytes failed: \(CryptoError.openSSL("RAND_bytes"))")
        return bytes
    }
}

/// SHA-256 (FIPS 180-4).
public enum SHA256 {
    /// The 32-byte digest of `bytes`.
    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let input = Array(bytes)
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = input.withUnsafeBytes { source in
            digest.withUnsafeMutableBufferPointer { target in
                EVP_Digest(source.baseAddress, source.count, target.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        precondition(ok == 1 && length == 32, "EVP_Digest(SHA-256) failed")
        return digest
    }

    /// The digest of a string's UTF-8 bytes.
    public static func hash(_ string: String) -> [UInt8] { hash(Array(string.utf8)) }
}

/// HMAC-SHA256 (RFC 2104).
public enum HMACSHA256 {
    /// The 32-byte MAC of `message` under `key`.
    public static func authenticate(_ message: some Collection<UInt8>, key: some Collection<UInt8>) -> [UInt8] {
        hmac(EVP_sha256(), size: 32, message, key: key)
    }
}

/// HMAC-SHA1 (RFC 2104): what RFC 6238's one-time passwords are made of, and nothing else here.
public enum HMACSHA1 {
    /// The 20-byte MAC of `message` under `key`.
    public static func authenticate(_ message: some Collection<UInt8>, key: some Collection<UInt8>) -> [UInt8] {
        hmac(EVP_sha1(), size: 20, message, key: key)
    }
}

private func hmac(_ digest: OpaquePointer?, size: Int, _ message: some Collection<UInt8>, key: some Collection<UInt8>)
    -> [UInt8]
{
    let message = Array(message)
    let key = Array(key)
    var mac = [UInt8](repeating: 0, count: size)
    var length: UInt32 = 0
    let result = key.withUnsafeBytes { keyBytes in
        message.withUnsafeBytes { messageBytes in
            mac.withUnsafeMutableBufferPointer { target in
                HMAC(
                    digest, keyBytes.baseAddress, Int32(keyBytes.count),
                    messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), messageBytes.count,
                    target.baseAddress, &length)
            }
        }
    }
    precondition(result != nil && Int(length) == size, "HMAC failed")
    return mac
}

/// Compares two byte strings in time that depends only on their lengths, never on where they
/// differ (OpenSSL's `CRYPTO_memcmp`).
public func constantTimeEquals(_ lhs: some Collection<UInt8>, _ rhs: some Collection<UInt8>) -> Bool {
    let lhs = Array(lhs)
    let rhs = Array(rhs)
    guard lhs.count == rhs.count else { return false }
    if lhs.isEmpty { return true }
    return lhs.withUnsafeBytes { a in rhs.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 } }
}

/// Lowercase hexadecimal, for digests in logs and tests.
public func hexString(_ bytes: some Collection<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var output = [UInt8]()
    output.reserveCapacity(bytes.count * 2)
    for byte in bytes {
        output.append(digits[Int(byte >> 4)])
        output.append(digits[Int(byte & 15)])
    }
    return String(decoding: output, as: UTF8.self)
}
