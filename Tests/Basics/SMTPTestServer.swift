import Foundation

/// A real SMTP server on a local port (`scripts/test-smtp-server.py`, on Debian's aiosmtpd):
/// the mails it accepted are read back from its directory, decoded as a mail client would.
public final class SMTPTestServer: @unchecked Sendable {
    public let port: Int
    public let directory: URL
    private let process: Process
    private let input: Pipe

    public var url: String { "smtp://127.0.0.1:\(port)" }

    /// - Parameters:
    ///   - user, password: AUTH required with these.
    ///   - reject: recipients refused for good (550).
    ///   - port: a port to listen on (to come up where a server was missing); a free one by default.
    ///   - tls: a certificate and key (PEM files): STARTTLS offered and required.
    /// The server started, waited for on a thread of its own (``onOwnThread(_:)``): Python's
    /// start takes seconds on a busy machine.
    public static func start(
        user: String? = nil, password: String? = nil, reject: [String] = [], port: Int? = nil,
        tls: (certificate: String, key: String)? = nil
    ) async throws -> SMTPTestServer {
        try await onOwnThread { try SMTPTestServer(user: user, password: password, reject: reject, port: port, tls: tls) }
    }

    init(
        user: String? = nil, password: String? = nil, reject: [String] = [], port: Int? = nil,
        tls: (certificate: String, key: String)? = nil
    ) throws {
        self.port = try port ?? PortHolder.unusedPort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pier-smtp-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/test-smtp-server.py")
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        var arguments = [script.path, "--port", String(self.port), "--directory", directory.path]
        if let user, let password { arguments += ["--user", user, "--password", password] }
        for address in reject { arguments += ["--reject", address] }
        if let tls { arguments += ["--tls-cert", tls.certificate, "--tls-key", tls.key] }
        process.arguments = arguments
        input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let said = output.fileHandleForReading.availableData
        guard String(decoding: said, as: UTF8.self).contains("ready") else {
            let why = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            throw CocoaError(
                .featureUnsupported, userInfo: [NSLocalizedDescriptionKey: "the test SMTP server did not start: \(why)"])
        }
    }

    deinit { stop() }

    /// Stops the server; the mails stay readable until deinit.
    public func stop() {
        guard process.isRunning else { return }
        // Signalled, not told by closing its input: a child the test started meanwhile (a
        // PostgreSQL server restarted by a test) inherits the pipe's write end and keeps it open.
        process.terminate()
        process.waitUntilExit()
    }

    /// Every mail accepted so far, oldest first.
    public func mails() -> [ReceivedMail] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".eml") && !$0.hasPrefix(".") }.sorted().compactMap { name in
            (try? Data(contentsOf: directory.appendingPathComponent(name))).map { ReceivedMail(Array($0)) }
        }
    }

    /// Waits until at least `count` mails arrived (up to 10 s) and returns them all.
    public func waitForMails(_ count: Int) async -> [ReceivedMail] {
        for _ in 0..<500 {
            let mails = mails()
            if mails.count >= count { return mails }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return mails()
    }
}

/// A mail as its reader sees it: headers, and the text and HTML parts decoded.
public struct ReceivedMail: Sendable {
    public var headers: [String: String] = [:]
    public var text = ""
    public var html = ""

    public init(_ bytes: [UInt8]) {
        let raw = String(decoding: bytes, as: UTF8.self)
        let (head, body) = Self.split(raw)
        headers = Self.headers(head)
        guard let type = headers["content-type"], let range = type.range(of: "boundary=\"") else {
            text = body
            return
        }
        let boundary = String(type[range.upperBound...].prefix { $0 != "\"" })
        for part in body.components(separatedBy: "--" + boundary).dropFirst() where !part.hasPrefix("--") {
            let (partHead, partBody) = Self.split(String(part.drop { $0 == "\r" || $0 == "\n" }))
            let partHeaders = Self.headers(partHead)
            var content = partBody
            if partHeaders["content-transfer-encoding"]?.lowercased() == "base64",
                let data = Data(base64Encoded: partBody.filter { !$0.isWhitespace })
            {
                content = String(decoding: data, as: UTF8.self)
            }
            if partHeaders["content-type"]?.hasPrefix("text/html") == true { html = content } else { text = content }
        }
    }

    /// The first `https?://` link of the text part that contains `fragment`.
    public func link(containing fragment: String) -> String? {
        text.split(whereSeparator: { $0.isWhitespace }).map(String.init).first {
            ($0.hasPrefix("http://") || $0.hasPrefix("https://")) && $0.contains(fragment)
        }
    }

    private static func split(_ text: String) -> (String, String) {
        guard let range = text.range(of: "\r\n\r\n") ?? text.range(of: "\n\n") else { return (text, "") }
        return (String(text[..<range.lowerBound]), String(text[range.upperBound...]))
    }

    private static func headers(_ head: String) -> [String: String] {
        var headers: [String: String] = [:]
        for line in head.components(separatedBy: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return headers
    }
}
