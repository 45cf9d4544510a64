import COpenSSL

/// A failure inside OpenSSL or libargon2. Its description carries the library's own error text
/// for logs; it is never shown to a client.
public struct CryptoError: Error, CustomStringConvertible {
    /// What Pier was doing when the library failed.
    public let operation: String
    /// The library's error text (OpenSSL's error queue, or libargon2's message).
    public let detail: String

    public var description: String { "\(operation) failed: \(detail)" }

    init(_ operation: String, detail: String) {
        self.operation = operation
        self.detail = detail
    }

    /// Captures and clears OpenSSL's thread-local error queue.
    static func openSSL(_ operation: String) -> CryptoError {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return CryptoError(operation, detail: messages.isEmpty ? "no error queued" : messages.joined(separator: "; "))
    }
}
