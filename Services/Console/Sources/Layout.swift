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

    /// The menu: the console's own pages, then the plugins' (`menu`, those the role may open).
    static func bar(_ session: ConsoleSession, menu: [ConsolePage]) -> HTML {
        let added = HTML.join(menu.map { "<a href=\"\(ConsolePath($0.path))\">\($0.title)</a>" }, separator: "\n")
        return """
            <header class="bar">
            <span class="brand">Pier console</span>
            <nav>
            <a href="/console/inbox">Inbox</a>
            <a href="/console/dashboard">Dashboard</a>
            <a href="/console/users">Users</a>
            <a href="/console/plans">Subscriptions</a>
            <a href="/console/audit">Audit log</a>
            \(session.isAdmin ? "<a href=\"/console/webhooks\">Webhooks</a>" : HTML.empty)
            \(added)
            </nav>
            <span class="who"><span data-who>\(session.email)</span> <span class="badge">\(label: session.role)</span>
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
        let text = CivilDate.iso8601(secondsSince1970: date.timeIntervalSince1970, fractionDigits: 0)
        return String(text.prefix(10)) + " " + String(text.dropFirst(11).prefix(5)) + " UTC"
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
