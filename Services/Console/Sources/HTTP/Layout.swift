import PierHTML
import PierHTTP
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The frame of every console page: the navigation, who is signed in (with the sign-out form),
/// the stylesheet and the one script, both from the console's own origin.
enum Layout {
    static func page(title: String, session: ConsoleSession?, menu: [ConsolePage] = [], content: HTML) -> HTML {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="same-origin">
        <title>\(title) · Pier console</title>
        <link rel="icon" href="/console/static/favicon.svg" type="image/svg+xml">
        <link rel="stylesheet" href="/console/static/console.css">
        <script src="/console/static/console.js" defer></script>
        </head>
        <body>
        \(session.map { bar($0, menu: menu) } ?? .empty)
        <main>
        \(content)
        </main>
        </body>
        </html>
        """
    }

    /// The menu's own entries: the page, its words, whether admins' only, and the paths that
    /// belong to it (an item's page is the inbox's).
    static let entries: [(path: String, title: String, admin: Bool, under: [String])] = [
        ("inbox", "Inbox", false, ["inbox", "feedback", "replies"]), ("dashboard", "Dashboard", false, ["dashboard"]),
        ("users", "Users", false, ["users"]), ("plans", "Subscriptions", false, ["plans"]),
        ("audit", "Audit log", false, ["audit"]), ("webhooks", "Webhooks", true, ["webhooks"]),
    ]

    /// The path of the page being drawn (set around each signed-in screen): its menu entry is
    /// marked `aria-current`.
    @TaskLocal static var drawing: String?

    /// The menu: the console's own pages, then the plugins' (`menu`, those the role may open),
    /// the one being shown marked.
    static func bar(_ session: ConsoleSession, menu: [ConsolePage]) -> HTML {
        let section = drawing.flatMap { $0.split(separator: "/").dropFirst().first.map(String.init) } ?? ""
        let own = entries.filter { !$0.admin || session.isAdmin }.map { ($0.path, $0.title, $0.under) }
        let links = HTML.join(
            (own + menu.map { ($0.path, $0.title, [$0.path]) }).map { path, title, under in
                under.contains(section)
                    ? "<a href=\"\(ConsolePath(path))\" aria-current=\"page\">\(title)</a>"
                    : "<a href=\"\(ConsolePath(path))\">\(title)</a>"
            }, separator: "\n")
        return """
            <header class="bar">
            <span class="brand">Pier console</span>
            <nav>
            \(links)
            </nav>
            <span class="who"><a href="/console/me" data-who title="Your name, as the team sees it">\(session.email)</a> <span class="badge">\(label: session.role)</span>
            <form class="inline" method="post" action="/console/sign-out">
            <input type="hidden" name="csrf" value="\(session.csrf)">
            <button class="plain" type="submit">Sign out</button>
            </form></span>
            </header>
            """
    }

    /// The hidden field every form of a signed-in page carries.
    static func csrf(_ session: ConsoleSession) -> HTML { "<input type=\"hidden\" name=\"csrf\" value=\"\(session.csrf)\">" }

    /// A date as the console shows it (UTC, to the minute).
    static func date(_ date: Date?) -> String {
        guard let date else { return "-" }
        return CivilDate.minute(secondsSince1970: date.timeIntervalSince1970)
    }
}

/// The stylesheet and the script, embedded in the binary.
enum Assets {
    static let css = PackageResources.console_css
    static let script = PackageResources.console_js
    static let icon = PackageResources.favicon_svg

    static func response(_ bytes: [UInt8], type: String) -> Response {
        var headers = Console.securityHeaders
        headers.set("Content-Type", type)
        headers.set("Cache-Control", "public, max-age=3600")
        return Response(status: 200, headers: headers, body: bytes)
    }
}
