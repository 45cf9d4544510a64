/// One message of a server-sent events stream (`text/event-stream`), as the HTML standard
/// frames them: fields on lines, a blank line ending the message.
public struct ServerSentEvent: Sendable, Equatable {
    public var id: String?
    public var event: String?
    /// The `data` lines joined by newlines; nil when the message had none (a heartbeat, a
    /// lone `retry`), which dispatches nothing.
    public var data: String?
    /// The reconnection delay the server asks for, in milliseconds.
    public var retry: Int?
    /// Comment lines (`: heartbeat`), without the colon and the spaces around.
    public var comments: [String]

    public init(id: String? = nil, event: String? = nil, data: String? = nil, retry: Int? = nil, comments: [String] = []) {
        self.id = id
        self.event = event
        self.data = data
        self.retry = retry
        self.comments = comments
    }

    /// A message of comments alone that says `heartbeat`.
    public var isHeartbeat: Bool { data == nil && comments.contains("heartbeat") }

    /// The complete messages at the start of `buffer`, removed from it; what follows the last
    /// blank line waits there for the rest of its message.
    public static func take(from buffer: inout [UInt8]) -> [ServerSentEvent] {
        var messages: [ServerSentEvent] = []
        var start = 0
        var index = 0
        while index + 1 < buffer.count {
            guard buffer[index] == 0x0A, buffer[index + 1] == 0x0A else {
                index += 1
                continue
            }
            messages.append(parse(String(decoding: buffer[start..<index], as: UTF8.self)))
            start = index + 2
            index = start
        }
        buffer.removeFirst(start)
        return messages
    }

    /// The message of one block (its lines, without the blank line that ends it).
    public static func parse(_ block: String) -> ServerSentEvent {
        var message = ServerSentEvent()
        for line in block.split(separator: "\n", omittingEmptySubsequences: true) {
            let line = line.hasSuffix("\r") ? line.dropLast() : line
            let field = line.prefix { $0 != ":" }
            var value = line.dropFirst(field.count)
            if value.hasPrefix(":") { value = value.dropFirst() }
            if value.hasPrefix(" ") { value = value.dropFirst() }
            switch field {
            case "": message.comments.append(String(value.reversed().drop { $0 == " " }.reversed()))
            case "id": message.id = String(value)
            case "event": message.event = String(value)
            case "data": message.data = message.data.map { $0 + "\n" + value } ?? String(value)
            case "retry": message.retry = Int(value)
            default: break
            }
        }
        return message
    }
}
