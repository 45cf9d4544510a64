import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One mail: plain text and HTML alternatives, no attachments, no tracking.
public struct MailMessage: Sendable, Equatable {
    /// `Name <address>` or a bare address.
    public var from: String
    public var to: String
    public var subject: String
    public var text: String
    public var html: String

    public init(from: String, to: String, subject: String, text: String, html: String) {
        self.from = from
        self.to = to
        self.subject = subject
        self.text = text
        self.html = html
    }

    /// The address part of `from` (what SMTP's `MAIL FROM` carries).
    public var senderAddress: String { Self.address(in: from) }

    /// The address in `Name <address>`, or the text itself.
    public static func address(in text: String) -> String {
        guard let open = text.lastIndex(of: "<"), let close = text.lastIndex(of: ">"), open < close else {
            return text.trimmingWhitespace()
        }
        return String(text[text.index(after: open)..<close])
    }

    /// The message as RFC 5322 text (CRLF lines): `multipart/alternative`, each part UTF-8 in
    /// base64 (safe for any content and any line length), non-ASCII headers RFC 2047-encoded.
    public func rendered(messageID: String, date: Date) -> [UInt8] {
        let boundary = "pier-" + messageID.filter { $0.isLetter || $0.isNumber }
        let domain = senderAddress.split(separator: "@").last.map(String.init) ?? "localhost"
        var lines = [
            "From: \(Self.encodedHeader(from))",
            "To: \(Self.encodedHeader(to))",
            "Subject: \(Self.encodedHeader(subject))",
            "Date: \(Self.rfc5322Date(date))",
            "Message-ID: <\(messageID)@\(domain)>",
            "MIME-Version: 1.0",
            "Content-Type: multipart/alternative; boundary=\"\(boundary)\"",
            "",
        ]
        for (type, body) in [("text/plain", text), ("text/html", html)] {
            lines += [
                "--\(boundary)", "Content-Type: \(type); charset=utf-8", "Content-Transfer-Encoding: base64", "",
            ]
            lines += Self.base64Lines(Array(body.utf8))
        }
        lines += ["--\(boundary)--", ""]
        return Array(lines.joined(separator: "\r\n").utf8)
    }

    /// A header value: as is when printable ASCII, else RFC 2047 `=?utf-8?B?…?=` words (the
    /// address of `Name <address>` kept readable).
    static func encodedHeader(_ value: String) -> String {
        let clean = String(value.map { $0 == "\r" || $0 == "\n" || $0 == "\r\n" ? " " : $0 })
        guard clean.utf8.contains(where: { $0 >= 0x80 }) else { return clean }
        if let open = clean.lastIndex(of: "<"), clean.hasSuffix(">") {
            let name = String(clean[..<open]).trimmingWhitespace()
            return encodedWord(name) + " " + clean[open...]
        }
        return encodedWord(clean)
    }

    private static func encodedWord(_ text: String) -> String {
        // Words of at most 45 bytes (60 base64 characters), never splitting a character.
        var words: [String] = []
        var chunk: [UInt8] = []
        for character in text {
            let bytes = Array(String(character).utf8)
            if chunk.count + bytes.count > 45 {
                words.append("=?utf-8?B?\(Data(chunk).base64EncodedString())?=")
                chunk = []
            }
            chunk += bytes
        }
        if !chunk.isEmpty { words.append("=?utf-8?B?\(Data(chunk).base64EncodedString())?=") }
        return words.joined(separator: " ")
    }

    private static func base64Lines(_ bytes: [UInt8]) -> [String] {
        let encoded = Data(bytes).base64EncodedString()
        var lines: [String] = []
        var index = encoded.startIndex
        while index < encoded.endIndex {
            let end = encoded.index(index, offsetBy: 76, limitedBy: encoded.endIndex) ?? encoded.endIndex
            lines.append(String(encoded[index..<end]))
            index = end
        }
        return lines
    }

    static func rfc5322Date(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let rest = seconds - days * 86_400
        let names = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let (year, month, day) = CivilDate.civil(days: days)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let weekday = names[Int(((days % 7) + 7) % 7)]
        return
            "\(weekday), \(day) \(months[Int(month) - 1]) \(year) \(two(rest / 3600)):\(two(rest % 3600 / 60)):\(two(rest % 60)) +0000"
    }
}
