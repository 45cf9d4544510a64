import PierHTML
import PierHTTP
import PierIdentity
import PierModels
import PierRuntime
import PierService

/// What the other plugins of the executable add to the console (``ServiceContext/plugins``):
/// pages in its menu, audit logs beside Pier's, events its webhook filter offers.
struct ConsoleAdditions: Sendable {
    let pages: [ConsolePage]
    /// Each plugin's audit log: the API's path segment it is served under (`config` for
    /// `/config/audit`) and its declaration.
    let auditLogs: [(service: String, declaration: AuditLogDeclaration)]
    /// The webhook types they declare.
    let events: [String]

    /// The console's own first segments, which no plugin's page may take.
    static let reserved: Set<String> = Set(Layout.entries.flatMap(\.under)).union([
        "", "sign-in", "sign-out", "two-step", "static",
    ])

    init(_ plugins: [Plugin] = []) throws(Environment.Failure) {
        try self.init(
            pages: plugins.flatMap(\.consolePages),
            auditLogs: plugins.compactMap { plugin in plugin.auditLog.map { (String(plugin.prefix.dropFirst()), $0) } },
            events: plugins.flatMap(\.events).map(\.type))
    }

    /// `pages` checked: each path of its own, none of the console's.
    init(
        pages declared: [ConsolePage], auditLogs: [(service: String, declaration: AuditLogDeclaration)] = [],
        events: [String] = []
    ) throws(Environment.Failure) {
        var pages: [ConsolePage] = []
        for page in declared {
            guard !page.path.isEmpty, page.path.count <= 40,
                page.path.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") })
            else {
                throw Environment.Failure(
                    variable: "console page", problem: "\"\(page.path)\" is not 1–40 lowercase letters, digits and -")
            }
            guard !Self.reserved.contains(page.path), !pages.contains(where: { $0.path == page.path }) else {
                throw Environment.Failure(variable: "console page", problem: "/console/\(page.path) is taken")
            }
            pages.append(page)
        }
        self.pages = pages
        self.auditLogs = auditLogs
        self.events = events
    }

    /// The pages `session`'s role may open, in the menu's order.
    func menu(for session: ConsoleSession) -> [ConsolePage] {
        pages.filter { $0.access == .staff || session.isAdmin }
    }

    /// A plugin's entry's target in words, and its page, when one declares it.
    func target(_ type: String) -> (words: String, page: String?)? {
        for log in auditLogs {
            if let found = log.declaration.targets.first(where: { $0.type == type }) { return (found.words, found.page) }
        }
        return nil
    }

    /// A plugin's action in words, when one declares it.
    func words(for action: String) -> String? {
        for log in auditLogs {
            if let found = log.declaration.actions.first(where: { $0.action == action }) { return found.words }
        }
        return nil
    }
}

/// The plugins' pages, hosted like the console's own: signed in, forms checked, framed by the
/// menu; what they draw is their own, what they change goes through the API as the team member.
struct PluginScreens: Sendable {
    let console: Console

    /// The deepest path a page answers: `/console/<page>/a/b/c`.
    static let depth = 3

    func routes(into router: Router<ServiceRequestContext>) {
        for page in console.additions.pages {
            var pattern = "/console/" + page.path
            for level in 0...Self.depth {
                if level > 0 { pattern += "/{s\(level)}" }
                let respond = console.staff { request, session, parameters in
                    try await serve(page, request, session, parameters, depth: level)
                }
                router.get(pattern) { try await respond($0, $1) }
                router.post(pattern) { try await respond($0, $1) }
            }
        }
    }

    func serve(
        _ page: ConsolePage, _ request: Request, _ session: ConsoleSession, _ parameters: Parameters, depth: Int
    ) async throws -> Response {
        guard page.access == .staff || session.isAdmin else { throw HTTPError.forbidden("Only admins may open this page.") }
        let segments = (0..<depth).compactMap { parameters["s\($0 + 1)"] }
        let form = try request.formPairs().filter { $0.name != "csrf" }
        let asked = ConsoleRequest(
            request: request, segments: segments, form: form,
            staff: ConsoleStaff(userID: session.userID, email: session.email, role: session.role),
            csrfField: Layout.csrf(session)
        ) { method, target, body in
            let reply = try await console.call(method, target, json: body, as: session, request)
            return ConsoleCall(status: reply.status, body: reply.body)
        }
        let reply: ConsoleReply
        do {
            reply = try await page.respond(asked)
        } catch let refused as ConsoleRefusal {
            throw Console.Failed(reply: PierAPI.Reply(status: refused.call.status, body: refused.call.body))
        }
        switch reply {
        case .page(let title, let content, let status):
            return console.page(status: (200..<600).contains(status) ? status : 500, title: title, session: session, content)
        case .redirect(let path):
            guard path.hasPrefix("/console/"), !path.contains("//"), !path.contains("\\") else {
                throw OutsideRedirect(page: page.path)
            }
            return console.redirect(ConsolePath(rawPath: path))
        }
    }
}

/// A plugin's page that redirected outside the console: a bug of the plugin, logged as a 500.
struct OutsideRedirect: Error, CustomStringConvertible {
    let page: String
    var description: String { "the console page /console/\(page) redirected outside /console/" }
}
