import COpenSSL

/// Secrets kept at rest (a second factor's shared secret, a provider's refresh token) sealed
/// with AES-256-GCM under a key the database never sees: a copy of the database alone reveals
/// none of them, and a sealed value moved to another row (another user's) does not open, since
/// the row's identity is bound in as associated data.
///
/// A sealed value is `version (1) ‖ nonce (12) ‖ ciphertext ‖ tag (16)`, the nonce random.
public struct SecretBox: Sendable {
    private let key: [UInt8]
    static let version: UInt8 = 1

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let description: String
    }

    /// - Parameter key: 32 bytes.
    public init(key: [UInt8]) throws(Failure) {
        guard key.count == 32 else { throw Failure(description: "an AES-256 key is 32 bytes, not \(key.count)") }
        self.key = key
    }

    /// A new random key.
    public static func generateKey() -> [UInt8] { SecureRandom.bytes(32) }

    public func seal(_ plaintext: [UInt8], context: [UInt8]) throws(Failure) -> [UInt8] {
        let nonce = SecureRandom.bytes(12)
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count)
        var tag = [UInt8](repeating: 0, count: 16)
        try run(encrypt: true, nonce: nonce, input: plaintext, output: &ciphertext, tag: &tag, context: context)
        return [Self.version] + nonce + ciphertext + tag
    }

    /// The plaintext, or a failure when `sealed` was not sealed by this key for `context` or was
    /// changed since.
    public func open(_ sealed: [UInt8], context: [UInt8]) throws(Failure) -> [UInt8] {
        guard sealed.count >= 1 + 12 + 16, sealed[0] == Self.version else {
            throw Failure(description: "not a sealed value")
        }
        let nonce = Array(sealed[1..<13])
        let ciphertext = Array(sealed[13..<(sealed.count - 16)])
        var tag = Array(sealed[(sealed.count - 16)...])
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count)
        try run(encrypt: false, nonce: nonce, input: ciphertext, output: &plaintext, tag: &tag, context: context)
        return plaintext
    }

    private func run(
        encrypt: Bool, nonce: [UInt8], input: [UInt8], output: inout [UInt8], tag: inout [UInt8], context: [UInt8]
    ) throws(Failure) {
        guard let cipher = EVP_CIPHER_CTX_new() else { throw Failure(description: "no cipher context") }
        defer { EVP_CIPHER_CTX_free(cipher) }
        let mode: Int32 = encrypt ? 1 : 0
        var length: Int32 = 0
        var ok = EVP_CipherInit_ex(cipher, EVP_aes_256_gcm(), nil, nil, nil, mode) == 1
        ok = ok && EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_SET_IVLEN, 12, nil) == 1
        ok = ok && EVP_CipherInit_ex(cipher, nil, nil, key, nonce, mode) == 1
        if !context.isEmpty {
            ok = ok && EVP_CipherUpdate(cipher, nil, &length, context, Int32(context.count)) == 1
        }
        if !input.isEmpty {
            ok =
                ok
                && output.withUnsafeMutableBufferPointer {
                    EVP_CipherUpdate(cipher, $0.baseAddress, &length, input, Int32(input.count))
                } == 1
        }
        if !encrypt {
            ok = ok && tag.withUnsafeMutableBytes { EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_SET_TAG, 16, $0.baseAddress) } == 1
        }
        var final = [UInt8](repeating: 0, count: 16)
        ok = ok && EVP_CipherFinal_ex(cipher, &final, &length) == 1
        if encrypt {
            ok = ok && tag.withUnsafeMutableBytes { EVP_CIPHER_CTX_ctrl(cipher, EVP_CTRL_GCM_GET_TAG, 16, $0.baseAddress) } == 1
        }
        ERR_clear_error()
        guard ok else {
            throw Failure(description: encrypt ? "sealing failed" : "the sealed value does not open with this key and context")
        }
    }
}
