import PierHTML
import PierHTTP
import PierModels

/// `/console/me`: the team member's own name, the one the team sees beside their work (the
/// assignee list, collision warnings, the audit log) and the one a saved reply's `{agent}` signs
/// with. Without one, the address names them.
struct ProfileScreens: Sendable {
    let console: Console

    /// `GET /console/me`.
    func form(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let me = try await console.fetch(AuthAPI.me, NoParameters(), as: session, request)
        return page(session, FormState(values: ["displayName": me.displayName ?? ""]), saved: request.query("done") == "saved")
    }

    /// `POST /console/me`: the name saved (an empty one cleared), or the form again with why not.
    func save(_ request: Request, _ session: ConsoleSession, _ parameters: Parameters) async throws -> Response {
        let values = try request.form() ?? [:]
        var form = FormState(values: ["displayName": values["displayName"] ?? ""])
        let reply = try await console.call(
            AuthAPI.updateProfile, NoParameters(), body: ProfileChange(displayName: form.value("displayName")), as: session,
            request)
        guard reply.ok else {
            form.take(reply.problem, status: reply.status)
            return page(session, form, saved: false, status: reply.status)
        }
        return console.redirect(ConsolePath("me", query: [("done", "saved")]))
    }

    private func page(_ session: ConsoleSession, _ form: FormState, saved: Bool, status: Int = 200) -> Response {
        let notice: HTML = saved ? "<p class=\"notice\" role=\"status\">Saved.</p>" : .empty
        return console.page(
            status: status, title: "Your name", session: session,
            """
            <h1>Your name</h1>
            \(notice)
            <p>What the team sees beside your work (assignments, who is viewing an item, the audit log), and what a saved reply's <code>{agent}</code> signs with. Without one, your address names you.</p>
            <form method="post" action="/console/me" data-profile>\(Layout.csrf(session))
            \(form.banner)
            \(form.input("displayName", "Your name (Maya Lind)", extra: " maxlength=\"100\" autocomplete=\"name\""))
            <button type="submit">Save</button>
            </form>
            """)
    }
}
