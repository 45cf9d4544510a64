import CCurl
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Where mails go: an SMTP server, or files for a developer to open.
public protocol MailTransport: Sendable {
    /// Sends one rendered message to `recipient`. A ``MailFailure`` says whether trying again
    /// may help.
    func send(_ message: [UInt8], from sender: String, to recipient: String) async throws(MailFailure)
}

/// Why a mail was not sent; never holds the message or a credential.
public struct MailFailure: Error, CustomStringConvertible, Sendable {
    public let message: String
    /// The server refused the mail for good (a 5xx reply: no such mailbox, refused sender):
    /// sending it again cannot succeed.
    public let permanent: Bool

    public init(_ message: String, permanent: Bool) {
        self.message = message
        self.permanent = permanent
    }

    public var description: String { message }
}

/// SMTP through libcurl: `smtp://host:port` (STARTTLS when the server offers it, required when
/// credentials are sent to a host other than the loopback) or `smtps://` (implicit TLS), with
/// AUTH when a user is configured. One connection per mail, on a small pool of threads: mails
/// are few and the outbox sends them one at a time.
public final class SMTPTransport: MailTransport {
    public let url: String
    private let user: String?
    private let password: String?
    private let caFile: String?
    private let timeoutSeconds: Int
    private let threads = BlockingPool(name: "smtp", threads: 1, queueLimit: 64)

    /// - Parameter caFile: PEM certificates to trust for the server's TLS instead of the system's
    ///   (a relay with a private CA).
    public init(url: String, user: String?, password: String?, caFile: String? = nil, timeoutSeconds: Int = 30) {
        _ = SMTPTransport.globalInit
        self.url = url
        self.user = user
        self.password = password
        self.caFile = caFile
        self.timeoutSeconds = timeoutSeconds
    }

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    /// True for `smtp://localhost`, `127.x.y.z`, `[::1]` (with or without a port): credentials
    /// may cross in clear there. The whole host is compared: `127.0.0.1.example.com` and
    /// `localhost.example.com` are other machines.
    var isLoopback: Bool {
        guard let rest = url.split(separator: "//", maxSplits: 1).dropFirst().first else { return false }
        var authority = Substring(rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" })
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        let host: Substring
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return false }
            let after = authority[authority.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { return false }
            host = authority[authority.index(after: authority.startIndex)..<close]
        } else {
            host = authority.prefix { $0 != ":" }
        }
        if host.lowercased() == "localhost" || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    public func send(_ message: [UInt8], from sender: String, to recipient: String) async throws(MailFailure) {
        let (url, user, password, caFile, timeout) = (url, user, password, caFile, timeoutSeconds)
        let tlsRequired = user != nil && !isLoopback
        do {
            try await threads.run {
                try SMTPTransport.perform(
                    url: url, user: user, password: password, caFile: caFile, tlsRequired: tlsRequired, timeout: timeout,
                    message: message, sender: sender, recipient: recipient)
            }
        } catch let failure as MailFailure {
            throw failure
        } catch {
            throw MailFailure("the mail could not be handed to the SMTP sender: \(error)", permanent: false)
        }
    }

    private final class Source {
        let bytes: [UInt8]
        var offset = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
    }

    private static func perform(
        url: String, user: String?, password: String?, caFile: String?, tlsRequired: Bool, timeout: Int, message: [UInt8],
        sender: String, recipient: String
    ) throws(MailFailure) {
        guard let handle = curl_easy_init() else { throw MailFailure("curl_easy_init failed", permanent: false) }
        defer { curl_easy_cleanup(handle) }
        let source = Source(message)
        let recipients = curl_slist_append(nil, "<\(recipient)>")
        defer { curl_slist_free_all(recipients) }
        let code: CURLcode = withExtendedLifetime(source) {
            _ = CCurl_setopt_string(handle, CURLOPT_URL, url)
            _ = CCurl_setopt_long(handle, CURLOPT_TIMEOUT, timeout)
            _ = CCurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
            _ = CCurl_setopt_string(handle, CURLOPT_MAIL_FROM, "<\(sender)>")
            _ = CCurl_setopt_pointer(handle, CURLOPT_MAIL_RCPT, UnsafeMutableRawPointer(recipients))
            _ = CCurl_setopt_long(handle, CURLOPT_USE_SSL, Int(tlsRequired ? CURLUSESSL_ALL.rawValue : CURLUSESSL_TRY.rawValue))
            if let caFile { _ = CCurl_setopt_string(handle, CURLOPT_CAINFO, caFile) }
            if let user { _ = CCurl_setopt_string(handle, CURLOPT_USERNAME, user) }
            if let password { _ = CCurl_setopt_string(handle, CURLOPT_PASSWORD, password) }
            _ = CCurl_setopt_long(handle, CURLOPT_UPLOAD, 1)
            _ = CCurl_setopt_long(handle, CURLOPT_INFILESIZE, message.count)
            _ = CCurl_setopt_pointer(handle, CURLOPT_READDATA, Unmanaged.passUnretained(source).toOpaque())
            _ = CCurl_setopt_read_function(handle) { buffer, size, count, context in
                let source = Unmanaged<Source>.fromOpaque(context!).takeUnretainedValue()
                let length = min(size * count, source.bytes.count - source.offset)
                guard length > 0, let buffer else { return 0 }
                source.bytes.withUnsafeBufferPointer { bytes in
                    UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + source.offset, byteCount: length)
                }
                source.offset += length
                return length
            }
            return curl_easy_perform(handle)
        }
        guard code == CURLE_OK else {
            var reply = 0
            _ = CCurl_response_code(handle, &reply)
            let text = String(cString: curl_easy_strerror(code))
            throw MailFailure(
                "SMTP: \(text)" + (reply > 0 ? " (server reply \(reply))" : ""), permanent: (500..<600).contains(reply))
        }
    }
}

/// Mails written as `.eml` files (what a mail client opens), for development and for a server
/// with no SMTP configured. A file's name says when, what and to whom, in that order:
/// `1764547200000-verify-your-address-to-zoe-example-com-1a2b3c4d.eml`.
public struct MailDirectory: MailTransport {
    public let path: String

    public init(path: String) { self.path = path }

    public func send(_ message: [UInt8], from sender: String, to recipient: String) async throws(MailFailure) {
        let directory = URL(fileURLWithPath: path, isDirectory: true)
        let what = Self.slug(Self.subject(of: message) ?? "mail")
        let name =
            "\(Int(Date().timeIntervalSince1970 * 1000))-\(what)-to-\(Self.slug(recipient))-\(UUID().uuidString.lowercased().prefix(8)).eml"
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(message).write(to: directory.appendingPathComponent(name), options: .atomic)
        } catch {
            throw MailFailure("the mail could not be written under \(path): \(error)", permanent: false)
        }
    }

    /// The message's subject, its encoded words (`=?utf-8?B?…?=`, as ``MailMessage`` writes them)
    /// decoded.
    static func subject(of message: [UInt8]) -> String? {
        let lines = String(decoding: message.prefix(4096), as: UTF8.self).split(
            separator: "\r\n" as Character, omittingEmptySubsequences: false)
        guard let first = lines.firstIndex(where: { $0.hasPrefix("Subject: ") }) else { return nil }
        var value = String(lines[first].dropFirst("Subject: ".count))
        for line in lines[(first + 1)...] {
            guard line.hasPrefix(" ") || line.hasPrefix("\t") else { break }
            value += line.drop { $0 == " " || $0 == "\t" }
        }
        var decoded = ""
        for word in value.split(separator: "?=") {
            if let range = word.firstRange(of: "=?utf-8?B?"),
                let data = Data(base64Encoded: String(word[range.upperBound...]))
            {
                decoded += word[..<range.lowerBound] + String(decoding: data, as: UTF8.self)
            } else {
                decoded += word
            }
        }
        return decoded
    }

    /// Lower-case letters and digits of `text`, the rest as single dashes, 40 characters at most.
    static func slug(_ text: String) -> String {
        var slug = ""
        for character in text.lowercased().unicodeScalars {
            if ("a"..."z").contains(character) || ("0"..."9").contains(character) {
                slug.unicodeScalars.append(character)
            } else if !slug.isEmpty, !slug.hasSuffix("-") {
                slug += "-"
            }
            if slug.count >= 40 { break }
        }
        while slug.hasSuffix("-") { slug.removeLast() }
        return slug.isEmpty ? "mail" : slug
    }
}
