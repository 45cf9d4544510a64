import PierHTML
import PierHTTP
import PierJSON
import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// An event a plugin appends to the event log (`EventLog.append`) that webhooks may send: an
/// endpoint of `PIER_WEBHOOKS` subscribes to it by `type`, and receives `{type, timestamp, data}`
/// with the event's payload as `data`.
public struct EventDeclaration: Sendable, Equatable {
    /// The event log's type, which is also the webhook's (`config.published`).
    public let type: String
    /// What it means, for the README of the team's deployment and the console.
    public let summary: String
    /// The payload's field whose value keeps deliveries in order (each value's events are sent
    /// one after the other); nil: every event of the type in one order.
    public let orderedBy: String?

    public init(_ type: String, summary: String, orderedBy: String? = nil) {
        (self.type, self.summary, self.orderedBy) = (type, summary, orderedBy)
    }
}

/// A plugin's audit log (`AuditLog.migration`, `AuditLog.routes`) as the console's audit page
/// reads it: under which title, and each action's words.
public struct AuditLogDeclaration: Sendable {
    /// What the console's "Part of Pier" filter calls it ("Remote config").
    public let title: String
    /// Each action's wire name and what the team member did, as a sentence's verb ("published
    /// the remote config").
    public let actions: [(action: String, words: String)]

    /// What its entries are about (`AuditLog.Record`'s target type), in words, and the console
    /// page of one (its id appended): `("config", "version", "/console/config/versions/")` shows
    /// "version 4", a link to `/console/config/versions/4`.
    public let targets: [(type: String, words: String, page: String?)]

    public init(
        title: String, actions: [(action: String, words: String)], targets: [(type: String, words: String, page: String?)] = []
    ) {
        (self.title, self.actions, self.targets) = (title, actions, targets)
    }
}

/// A page a plugin adds to the console (`/console/<path>`): an entry in its menu, and every
/// screen under it (`/console/<path>/…`, up to three more segments). The console signs the
/// team member in, checks each form's origin and CSRF token, and frames what the page draws
/// with its menu and stylesheet; the page reads and changes through the API, as the team
/// member (``ConsoleRequest/call(_:_:body:)``), so the endpoints' roles and audit apply.
public struct ConsolePage: Sendable {
    /// Who sees it in the menu and may open it.
    public enum Access: Sendable { case staff, admin }

    /// Its first segment: lowercase letters, digits and `-` (`config`), none of the console's own.
    public let path: String
    /// Its entry in the menu ("Remote config").
    public let title: String
    public let access: Access
    public let respond: @Sendable (ConsoleRequest) async throws -> ConsoleReply

    public init(
        path: String, title: String, access: Access = .staff,
        respond: @escaping @Sendable (ConsoleRequest) async throws -> ConsoleReply
    ) {
        (self.path, self.title, self.access, self.respond) = (path, title, access, respond)
    }
}

/// What a plugin's console page answers.
public enum ConsoleReply: Sendable {
    /// A page: its title and content, framed by the console.
    case page(title: String, content: HTML, status: Int = 200)
    /// 303 to `path`, which must start with `/console/` (after a form).
    case redirect(String)
}

/// The team member who opened a console page.
public struct ConsoleStaff: Sendable {
    public let userID: UUID
    public let email: String
    public let role: AccountRole
    public var isAdmin: Bool { role == .admin }

    public init(userID: UUID, email: String, role: AccountRole) { (self.userID, self.email, self.role) = (userID, email, role) }
}

/// A request to a plugin's console page.
public struct ConsoleRequest: Sendable {
    public let request: Request
    /// The path's segments after the page's own (`/console/config/versions/3` → `versions`, `3`),
    /// decoded.
    public let segments: [String]
    /// A posted form's fields in order, the CSRF token checked and left out (empty for a GET).
    public let form: [(name: String, value: String)]
    public let staff: ConsoleStaff
    /// The hidden field every form the page draws must carry (a form posted without it is
    /// refused).
    public let csrfField: HTML
    private let send: @Sendable (String, String, [UInt8]?) async throws -> ConsoleCall

    public init(
        request: Request, segments: [String], form: [(name: String, value: String)], staff: ConsoleStaff, csrfField: HTML,
        send: @escaping @Sendable (String, String, [UInt8]?) async throws -> ConsoleCall
    ) {
        (self.request, self.segments, self.form, self.staff) = (request, segments, form, staff)
        (self.csrfField, self.send) = (csrfField, send)
    }

    /// A form field's value (the first of that name), else the query's.
    public func value(_ name: String) -> String? {
        form.first { $0.name == name }?.value ?? request.query(name)
    }

    /// `endpoint` with `body`, as the team member: the reply as it came (a form shows a refusal
    /// beside its fields).
    public func call<Parameters, Body: Encodable, Answer>(
        _ endpoint: Endpoint<Parameters, Body, Answer>, _ parameters: Parameters, body: Body
    ) async throws -> ConsoleCall {
        try await send(endpoint.method, endpoint.target(parameters), try JSON.encode(body))
    }

    /// `endpoint`, which takes no body, as the team member: the reply as it came.
    public func call<Parameters, Answer>(_ endpoint: Endpoint<Parameters, NoBody, Answer>, _ parameters: Parameters)
        async throws -> ConsoleCall
    {
        try await send(endpoint.method, endpoint.target(parameters), nil)
    }

    /// The answer of `endpoint`, which must succeed (a page's data): a refusal becomes the
    /// console's page saying why (``ConsoleRefusal``).
    public func fetch<Parameters, Answer: Decodable>(_ endpoint: Endpoint<Parameters, NoBody, Answer>, _ parameters: Parameters)
        async throws -> Answer
    {
        let reply = try await call(endpoint, parameters)
        guard reply.ok else { throw ConsoleRefusal(reply) }
        return try reply.decode(Answer.self)
    }
}

/// A reply of Pier's API to a console page.
public struct ConsoleCall: Sendable {
    public let status: Int
    public let body: [UInt8]

    public init(status: Int, body: [UInt8]) { (self.status, self.body) = (status, body) }

    public var ok: Bool { (200..<300).contains(status) }
    /// What a refusal said (its code, and each field's problem).
    public var problem: Problem? { ok ? nil : try? WireDecoder.decode(Problem.self, from: body) }

    public func decode<T: Decodable>(_ type: T.Type) throws -> T { try WireDecoder.decode(type, from: body) }
}

/// A refusal a console page does not draw itself: the console shows its page in words (what
/// happened, the way back, the details for a bug report).
public struct ConsoleRefusal: Error, Sendable {
    public let call: ConsoleCall

    public init(_ call: ConsoleCall) { self.call = call }
}
