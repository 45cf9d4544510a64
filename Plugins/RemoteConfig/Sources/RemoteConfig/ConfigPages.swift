import PierHTML
import PierHTTP
import PierModels
import PierService
import RemoteConfigAPI

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Remote config in the console (`/console/config`): the parameters as apps get them, a
/// parameter's form (admins publish), what someone gets and why, the history with what each
/// version changed, and a rollback. Everything goes through the plugin's API as the team member:
/// its roles decide, its audit log records.
enum ConfigPages {
    static let page = ConsolePage(path: "config", title: "Remote config") { request in
        let segments = request.segments
        let post = request.request.method == "POST"
        switch (segments.first ?? "", segments.count) {
        case ("", 0) where !post: return try await overview(request)
        case ("parameters", 2): return try await ConfigForm(request: request).parameter(segments[1])
        case ("parameters", 3) where post && segments[2] == "delete":
            return try await ConfigForm(request: request).delete(segments[1])
        case ("preview", 1): return try await preview(request)
        case ("versions", 1) where !post: return try await history(request)
        case ("versions", 2) where !post: return try await version(request, segments[1])
        case ("versions", 3) where post && segments[2] == "rollback": return try await rollback(request, segments[1])
        default: throw HTTPError.notFound("No such remote config page.")
        }
    }

    // MARK: - The parameters

    static func overview(_ request: ConsoleRequest) async throws -> ConsoleReply {
        let current = try await request.fetch(RemoteConfigAPI.versions, NoParameters()).items.first
        let names = await request.names(Set(current.map { [$0.publishedBy] } ?? []))
        let rows = HTML.join(
            (current?.parameters ?? []).map { parameter in
                """
                <tr><td><a href="/console/config/parameters/\(parameter.key)"><code>\(parameter.key)</code></a></td>
                <td>\(ConfigWords.kind(parameter.type))</td><td>\(ConfigWords.value(parameter.defaultValue))</td>
                <td>\(ConfigWords.rules(parameter.rules))</td><td>\(parameter.description ?? "")</td></tr>
                """
            })
        let published: HTML =
            request.value("published").flatMap { Int($0) }.map {
                "<p class=\"notice\" role=\"status\">Version \($0) published: running apps get it within a second.</p>"
            } ?? .empty
        let adding: HTML =
            request.staff.isAdmin
            ? "<a href=\"/console/config/parameters/new\">Add a parameter</a>"
            : "<span class=\"muted\">Admins add and change parameters.</span>"
        let state: HTML =
            current.map {
                "<p class=\"muted\">Version \($0.version), published \(ConfigWords.date($0.publishedAt)) by \(names[$0.publishedBy] ?? "a team member"). \($0.note)</p>"
            } ?? "<p class=\"muted\">Nothing published yet: apps get the defaults written in their code.</p>"
        return .page(
            title: "Remote config",
            content: """
                <h1>Remote config</h1>
                \(published)
                \(state)
                <p class="spans">\(adding) <a href="/console/config/preview">What does someone get?</a> <a href="/console/config/versions">History</a></p>
                <table><thead><tr><th>Key</th><th>Kind</th><th>Everyone gets</th><th>Except</th><th>Description</th></tr></thead>
                <tbody data-empty="No parameter yet.">\(rows)</tbody></table>
                """)
    }

    // MARK: - Preview

    /// "What does this user get and why": an account (address or id) and the app's facts.
    static func preview(_ request: ConsoleRequest) async throws -> ConsoleReply {
        let fields = ["account", "installation", "platform", "appVersion", "locale", "country"]
        var typed: [String: String] = [:]
        for name in fields {
            if let value = request.value(name)?.trimmingWhitespace(), !value.isEmpty { typed[name] = String(value.prefix(200)) }
        }
        var problems: [String: String] = [:]
        var answer: HTML = .empty
        if request.request.method == "POST" {
            var asked = ConfigPreviewRequest(
                installationId: typed["installation"], platform: typed["platform"], appVersion: typed["appVersion"],
                locale: typed["locale"], country: typed["country"])
            if let account = typed["account"] {
                switch try await request.account(account) {
                case .account(let id): asked.userId = id
                case .nobody(let why): problems["account"] = why
                }
            }
            if problems.isEmpty {
                let reply = try await request.call(RemoteConfigAPI.preview, NoParameters(), body: asked)
                if reply.ok {
                    answer = Self.preview(try reply.decode(ConfigPreview.self), signedIn: asked.userId != nil)
                } else if let errors = reply.problem?.errors, !errors.isEmpty {
                    for error in errors { problems[Self.previewField(error.field)] = error.message }
                } else {
                    throw ConsoleRefusal(reply)
                }
            }
        }
        func field(_ name: String, _ title: String, _ hint: String) -> HTML {
            let problem: HTML =
                problems[name].map { "<span class=\"problem\" role=\"alert\" id=\"\(name)-problem\">\($0)</span>" } ?? .empty
            return problems[name] == nil
                ? "<label>\(title) <input name=\"\(name)\" value=\"\(typed[name])\" placeholder=\"\(hint)\"></label>"
                : "<label>\(title) <input name=\"\(name)\" value=\"\(typed[name])\" placeholder=\"\(hint)\" aria-invalid=\"true\" aria-describedby=\"\(name)-problem\">\(problem)</label>"
        }
        return .page(
            title: "What does someone get?",
            content: """
                <h1>What does someone get?</h1>
                <p class="muted">The values an app would get now, and the rule that gave each one. Leave the account empty for someone signed out.</p>
                <form class="filters" method="post" action="/console/config/preview">
                \(request.csrfField)
                \(field("account", "Account (address or name)", "sam@example.com"))
                \(field("platform", "Platform", "ios"))
                \(field("appVersion", "App version", "2.4.1"))
                \(field("locale", "Language", "fr-CA"))
                \(field("country", "Country", "FR"))
                \(field("installation", "Installation id", "from the app's settings screen"))
                <button type="submit">Show</button>
                </form>
                \(answer)
                <p><a href="/console/config">Back to remote config</a></p>
                """, status: problems.isEmpty ? 200 : 422)
    }

    static func preview(_ preview: ConfigPreview, signedIn: Bool) -> HTML {
        let rows = HTML.join(
            preview.values.keys.sorted().map { key in
                let reason = preview.reasons[key] ?? "default"
                let why: HTML = reason == "default" ? "<span class=\"muted\">what everyone gets</span>" : "the rule “\(reason)”"
                return
                    "<tr><td><code>\(key)</code></td><td>\(ConfigWords.value(preview.values[key] ?? .null))</td><td>\(why)</td></tr>"
            })
        let owned: HTML =
            signedIn
            ? (preview.entitlements.isEmpty
                ? "<p>The account has no entitlement now.</p>"
                : "<p>The account has now: \(preview.entitlements.joined(separator: ", ")).</p>")
            : .empty
        return """
            <h2>From version \(preview.version)</h2>
            \(owned)
            <table data-preview><thead><tr><th>Key</th><th>Gets</th><th>Because of</th></tr></thead><tbody data-empty="No parameter.">\(rows)</tbody></table>
            """
    }

    static func previewField(_ field: String) -> String {
        ["userId": "account", "installationId": "installation"][field] ?? field
    }

    // MARK: - History

    static func history(_ request: ConsoleRequest) async throws -> ConsoleReply {
        let versions = try await request.fetch(RemoteConfigAPI.versions, NoParameters()).items
        let names = await request.names(Set(versions.map(\.publishedBy)))
        let rows = HTML.join(
            versions.enumerated().map { index, version in
                let older = index + 1 < versions.count ? versions[index + 1].parameters : []
                let changed = ConfigDiff.keys(older, version.parameters)
                let restores: HTML = version.restores.map { "<span class=\"badge\">rollback to \($0)</span> " } ?? .empty
                return """
                    <tr><td><a href="/console/config/versions/\(version.version)">\(version.version)</a></td>
                    <td class="muted when">\(ConfigWords.date(version.publishedAt))</td><td>\(names[version.publishedBy] ?? "a team member")</td>
                    <td>\(restores)\(version.note)</td><td>\(changed.isEmpty ? "nothing" : changed.joined(separator: ", "))</td></tr>
                    """
            })
        return .page(
            title: "Remote config history",
            content: """
                <h1>Remote config history</h1>
                <table><thead><tr><th>Version</th><th>Published</th><th>By</th><th>Note</th><th>Changed</th></tr></thead>
                <tbody data-empty="Nothing published yet.">\(rows)</tbody></table>
                <p class="muted">The 50 newest versions. Every publication and rollback is in the audit log.</p>
                <p><a href="/console/config">Back to remote config</a></p>
                """)
    }

    static func version(_ request: ConsoleRequest, _ text: String) async throws -> ConsoleReply {
        guard let number = Int(text), number > 0 else { throw HTTPError.notFound("No such version.") }
        let version = try await request.fetch(RemoteConfigAPI.version, ConfigVersionPath(number))
        let previous: [ConfigParameter]
        if number > 1 {
            let reply = try await request.call(RemoteConfigAPI.version, ConfigVersionPath(number - 1))
            previous = reply.ok ? try reply.decode(ConfigVersion.self).parameters : []
        } else {
            previous = []
        }
        let newest = try await request.fetch(RemoteConfigAPI.versions, NoParameters()).items.first?.version ?? number
        let names = await request.names([version.publishedBy])
        let rollback: HTML =
            request.staff.isAdmin && number != newest
            ? """
            <form class="actions" method="post" action="/console/config/versions/\(number)/rollback" data-confirm="Publish version \(number)'s parameters again, for every app?">
            \(request.csrfField)
            <button class="danger" type="submit">Roll back to this version</button>
            </form>
            """
            : (number == newest ? "<p class=\"muted\">This is the version apps get now.</p>" : .empty)
        return .page(
            title: "Remote config version \(number)",
            content: """
                <h1>Version \(number)</h1>
                <p class="muted">Published \(ConfigWords.date(version.publishedAt)) by \(names[version.publishedBy] ?? "a team member").</p>
                <p>\(version.note)</p>
                <h2>What it changed from version \(number - 1)</h2>
                \(ConfigDiff.html(previous, version.parameters))
                \(rollback)
                <p><a href="/console/config/versions">Back to the history</a></p>
                """)
    }

    static func rollback(_ request: ConsoleRequest, _ text: String) async throws -> ConsoleReply {
        guard let number = Int(text), number > 0 else { throw HTTPError.notFound("No such version.") }
        let reply = try await request.call(RemoteConfigAPI.rollback, ConfigVersionPath(number))
        guard reply.ok else { throw ConsoleRefusal(reply) }
        return .redirect("/console/config?published=\(try reply.decode(ConfigVersion.self).version)")
    }
}
