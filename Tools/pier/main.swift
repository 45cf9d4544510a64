// `pier`: Pier from a terminal or a script, built on PierClient. `pier --help` lists the commands.
import Foundation
import PierClient
import PierModels

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let usage = """
    pier: Pier from a terminal or a script.

    Usage: pier [--url URL] [--json] COMMAND …

      register EMAIL [--name NAME] [--device NAME]   create an account and sign in (password asked, or --password-stdin)
      login EMAIL [--device NAME]        sign in (the device name the session list shows; default "pier on HOST")
      sign-in PROVIDER ID_TOKEN --nonce RAW [--name NAME] [--device NAME]   sign in with an ID token (apple, or an OIDC provider's name)
      logout [--all]                     sign out here and on the server (--all: every session of the account)
      whoami                             the signed-in user
      profile [--name NAME] [--locale fr-CA]   change your display name or locale ("" clears)
      email verify TOKEN|LINK            verify the address with the mailed link (or its token)
      email change NEW_EMAIL             use another address (password asked unless you signed in within 5 minutes)
      email confirm TOKEN|LINK           confirm the new address with the link mailed to it (or its token)
      email cancel TOKEN|LINK            cancel a change of address with the link mailed to the old address
      email resend [EMAIL]               mail the verification link again (yours, or EMAIL's when signed out)
      password forgot EMAIL              mail a password-reset link
      password reset TOKEN|LINK          set a new password with the mailed link or its token (asked, or --password-stdin)
      identities                         the providers you sign in with (Apple, OpenID Connect)
      identities unlink ID               stop signing in with one (password asked unless you signed in within 5 minutes)
      sessions                           your sessions, one per device
      sessions end ID                    end one of them at once
      export [--output FILE]             download everything Pier holds about you (JSON)
      delete-account                     delete your account (password asked unless you signed in within 5 minutes)
      feedback send MESSAGE [--rating 1-5] [--category C] [--platform P]
      feedback list [--limit N] [--cursor C]      your own feedback
      status                             your subscription status
      plans                              the plans on sale

      admin feedback list [--status S] [--category C] [--platform P] [--q TEXT] [--moderation M] [--limit N] [--cursor C]
      admin feedback show ID
      admin feedback update ID [--status S] [--duplicate-of ID] [--tags a,b] [--note TEXT] [--moderation approved|rejected]
      admin feedback export [--format csv|ndjson] [--output FILE]  (progress on a terminal)
      admin plans create ID --name N --price MINOR_UNITS --currency CUR --period P1M [--trial P1W]
                         [--entitlements a,b] [--products p1,p2] [--description TEXT]
      admin plans update ID [--name N] [--price …] [--active true|false] …   (the options of create)
      admin plans deactivate ID
      admin grant USER_ID PLAN_ID (--duration P1M | --until DATE) --reason TEXT
      admin user USER_ID [--refresh]     a user's subscription status and its facts (--refresh: read again from Apple)

    Options:
      --url URL        the server (default $PIER_URL, else http://127.0.0.1:8080)
      --json           print the server's JSON, for scripts
      --password-stdin read the password from standard input (else $PIER_PASSWORD, else asked)
      --help           this text

    The session is kept in $XDG_CONFIG_HOME/pier/session.json (else ~/.config/pier/session.json),
    readable by you only.

    Exit codes: 0 done; 1 other failure; 2 usage; 3 not signed in or refused (401/403);
    4 not found; 5 invalid or conflicting (400/409/422); 6 unavailable, rate limited or offline
    (try again later).
    """

/// `pier COMMAND … --help`: the lines of `usage` for that command, and the options; the whole
/// text for no command or one it does not know.
func help(for words: [String]) -> String {
    let topic = words.joined(separator: " ")
    let lines = usage.split(separator: "\n", omittingEmptySubsequences: false)
    // A command's line, and the more indented lines that continue it.
    var commands: [String] = []
    var taking = false
    for line in lines {
        if line.hasPrefix("   "), taking {
            commands[commands.count - 1] += "\n      " + line.trimmingCharacters(in: .whitespaces)
        } else {
            taking = line.hasPrefix("  ") && !line.hasPrefix("   ") && line.dropFirst(2).hasPrefix(topic)
            if taking { commands.append(String(line.dropFirst(2))) }
        }
    }
    guard !topic.isEmpty, !commands.isEmpty, let options = usage.range(of: "Options:") else { return usage }
    return "Usage: pier [--url URL] [--json] …\n  " + commands.joined(separator: "\n  ") + "\n\n" + usage[options.lowerBound...]
}

func standardError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

let environment = ProcessInfo.processInfo.environment

func sessionFile() -> URL {
    let base =
        environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0) }
        ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config")
    return base.appendingPathComponent("pier/session.json")
}

/// The password: from standard input with `--password-stdin`, else `$PIER_PASSWORD`, else asked
/// on the terminal without echo.
func password(_ arguments: Arguments) throws(CLIError) -> String {
    if arguments.flag("password-stdin") {
        guard let line = readLine(strippingNewline: true), !line.isEmpty else { throw .usage("no password on standard input") }
        return line
    }
    if let given = environment["PIER_PASSWORD"], !given.isEmpty { return given }
    guard isatty(0) == 1 else { throw .usage("give the password with --password-stdin or $PIER_PASSWORD") }
    FileHandle.standardError.write(Data("Password: ".utf8))
    var saved = termios()
    tcgetattr(0, &saved)
    var silent = saved
    silent.c_lflag &= ~tcflag_t(ECHO)
    tcsetattr(0, TCSANOW, &silent)
    let line = readLine(strippingNewline: true)
    tcsetattr(0, TCSANOW, &saved)
    standardError("")
    guard let line, !line.isEmpty else { throw .usage("no password given") }
    return line
}

/// Prints `rows` under `headers`, columns aligned.
/// The token of a mailed link: the `token` parameter of a whole link pasted as it is (from
/// any host: the link may point at the app's universal-link domain), or the token itself.
func mailedToken(_ given: String) throws(CLIError) -> String {
    let text = given.trimmingCharacters(in: .whitespacesAndNewlines)
    guard text.contains("://") || text.contains("?") else { return text }
    guard let components = URLComponents(string: text),
        let token = components.queryItems?.first(where: { $0.name == "token" })?.value, !token.isEmpty
    else { throw CLIError.usage("the link has no token=… in it; paste the whole link from the mail, or the token alone") }
    return token
}

func table(_ headers: [String], _ rows: [[String]]) {
    let widths = headers.indices.map { column in
        ([headers[column]] + rows.map { $0[column] }).map(\.count).max() ?? 0
    }
    func line(_ cells: [String]) -> String {
        zip(cells, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")
            .trimmingCharacters(in: .whitespaces)
    }
    print(line(headers))
    for row in rows { print(line(row)) }
}

func shortDate(_ date: Date?) -> String {
    guard let date else { return "" }
    return ISO8601DateFormatter().string(from: date)
}

func printJSON(_ data: Data) {
    FileHandle.standardOutput.write(data)
    if data.last != UInt8(ascii: "\n") { print("") }
}

let decoder: JSONDecoder = {
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .iso8601
    return decoder
}()

func decode<T: Decodable>(_ type: T.Type, _ data: Data) throws(CLIError) -> T {
    do { return try decoder.decode(T.self, from: data) } catch {
        throw .failed("the server's answer could not be read: \(error)", code: 1)
    }
}

func body(_ object: [String: Any?]) -> Data {
    let present = object.compactMapValues { $0 }
    return (try? JSONSerialization.data(withJSONObject: present, options: [.sortedKeys])) ?? Data("{}".utf8)
}

func run(_ given: Arguments) async throws -> Int32 {
    var arguments = given
    if arguments.flag("help") || arguments.words.isEmpty {
        print(help(for: arguments.words))
        return arguments.words.isEmpty && !arguments.flag("help") ? 2 : 0
    }
    let base = arguments.option("url") ?? environment["PIER_URL"] ?? "http://127.0.0.1:8080"
    guard let url = URL(string: base), url.scheme == "http" || url.scheme == "https" else {
        throw CLIError.usage("--url must be an http or https URL")
    }
    let json = arguments.flag("json")
    let pier = PierClient(baseURL: url, sessionStore: FileSessionStore(url: sessionFile()))
    let command = try arguments.next("a command")
    switch command {
    case "register", "login":
        let email = try arguments.next("an email address")
        let name = command == "register" ? arguments.option("name") : nil
        let device = arguments.option("device") ?? "pier on \(ProcessInfo.processInfo.hostName)"
        try arguments.finish()
        let secret = try password(arguments)
        let user =
            command == "register"
            ? try await pier.auth.register(email: email, password: secret, displayName: name, deviceName: device)
            : try await pier.auth.login(email: email, password: secret, deviceName: device)
        if json {
            printJSON(try JSONEncoder.pier.encode(user))
        } else {
            print("Signed in as \(user.email) (\(user.id.uuidString.lowercased()))")
        }
    case "sign-in":
        let provider = try arguments.next("a provider (apple, or an OpenID Connect provider's name)")
        let token = try arguments.next("the ID token")
        guard let nonce = arguments.option("nonce") else { throw CLIError.usage("--nonce RAW is required") }
        let name = arguments.option("name")
        let device = arguments.option("device") ?? "pier on \(ProcessInfo.processInfo.hostName)"
        try arguments.finish()
        let user = try await pier.auth.signIn(
            provider: provider, identityToken: token, nonce: nonce, fullName: name, deviceName: device)
        if json {
            printJSON(try JSONEncoder.pier.encode(user))
        } else {
            print("Signed in as \(user.email) (\(user.id.uuidString.lowercased()))")
        }
    case "logout":
        let everywhere = arguments.flag("all")
        try arguments.finish()
        if everywhere {
            try await pier.auth.logoutEverywhere()
            if !json { print("Signed out everywhere") }
        } else {
            await pier.auth.logout()
            if !json { print("Signed out") }
        }
    case "email":
        let action = try arguments.next("verify, resend, change, confirm or cancel")
        switch action {
        case "verify":
            let token = try mailedToken(arguments.next("the mailed link or its token"))
            try arguments.finish()
            let user = try await pier.auth.verifyEmail(token: token)
            if json { printJSON(try JSONEncoder.pier.encode(user)) } else { print("Verified: \(user.email)") }
        case "change":
            let newEmail = try arguments.next("the new address")
            try arguments.finish()
            try await pier.auth.changeEmail(to: newEmail, password: try? password(arguments))
            if !json { print("A confirmation link was mailed to \(newEmail); the address changes once it is opened.") }
        case "confirm":
            let token = try mailedToken(arguments.next("the mailed link or its token"))
            try arguments.finish()
            let user = try await pier.auth.confirmEmailChange(token: token)
            if json { printJSON(try JSONEncoder.pier.encode(user)) } else { print("Your address is now \(user.email)") }
        case "cancel":
            let token = try mailedToken(arguments.next("the mailed link or its token"))
            try arguments.finish()
            let user = try await pier.auth.cancelEmailChange(token: token)
            if json {
                printJSON(try JSONEncoder.pier.encode(user))
            } else {
                print("Change cancelled: your address stays \(user.email); the device that asked was signed out.")
            }
        case "resend":
            let email = arguments.nextIfAny()
            try arguments.finish()
            try await pier.auth.resendVerification(email: email)
            if !json { print("If the account exists and is not verified yet, a mail is on its way.") }
        default:
            throw CLIError.usage("unknown email command \"\(action)\"")
        }
    case "password":
        let action = try arguments.next("forgot or reset")
        switch action {
        case "forgot":
            let email = try arguments.next("an email address")
            try arguments.finish()
            try await pier.auth.forgotPassword(email: email)
            if !json { print("If an account has this address, a mail with a link is on its way.") }
        case "reset":
            let token = try mailedToken(arguments.next("the mailed link or its token"))
            try arguments.finish()
            try await pier.auth.resetPassword(token: token, newPassword: try password(arguments))
            if !json { print("Password changed; every session ended. Sign in with the new one.") }
        default:
            throw CLIError.usage("unknown password command \"\(action)\"")
        }
    case "profile":
        let name = arguments.option("name")
        let locale = arguments.option("locale")
        try arguments.finish()
        guard name != nil || locale != nil else { throw CLIError.usage("give --name or --locale") }
        let user = try await pier.auth.updateProfile(displayName: name, locale: locale)
        if json {
            printJSON(try JSONEncoder.pier.encode(user))
        } else {
            print("Name: \(user.displayName ?? "(none)"), locale: \(user.locale ?? "(none)")")
        }
    case "export":
        let output = arguments.option("output")
        try arguments.finish()
        let data = try await pier.auth.exportData()
        if let output {
            try data.write(to: URL(fileURLWithPath: output), options: .atomic)
            if !json { print("Written to \(output) (\(data.count) bytes)") }
        } else {
            printJSON(data)
        }
    case "delete-account":
        try arguments.finish()
        try await pier.auth.deleteAccount(password: try? password(arguments))
        if !json { print("Account deleted") }
    case "sessions":
        if let action = arguments.nextIfAny() {
            guard action == "end" else { throw CLIError.usage("unknown sessions command \"\(action)\"") }
            let id = try arguments.next("the session id")
            try arguments.finish()
            guard let uuid = UUID(uuidString: id) else { throw CLIError.usage("the session id must be a UUID") }
            try await pier.auth.endSession(uuid)
            if !json { print("Session ended") }
        } else {
            try arguments.finish()
            let data = try await pier.call("GET", "/auth/sessions")
            if json {
                printJSON(data)
            } else {
                table(
                    ["id", "device", "address", "signed in", "last used", ""],
                    try decode(ItemList<SessionInfo>.self, data).items.map {
                        [
                            $0.id.uuidString.lowercased(), $0.deviceName ?? "", $0.clientAddress ?? "", shortDate($0.createdAt),
                            $0.lastUsedAt.map(shortDate) ?? "", $0.current ? "(this one)" : "",
                        ]
                    })
            }
        }
    case "identities":
        if let action = arguments.nextIfAny() {
            guard action == "unlink" else { throw CLIError.usage("unknown identities command \"\(action)\"") }
            let id = try arguments.next("the identity id")
            try arguments.finish()
            guard let uuid = UUID(uuidString: id) else { throw CLIError.usage("the identity id must be a UUID") }
            try await pier.auth.unlinkIdentity(uuid, password: try? password(arguments))
            if !json { print("Unlinked") }
        } else {
            try arguments.finish()
            let data = try await pier.call("GET", "/auth/identities")
            if json {
                printJSON(data)
            } else {
                table(
                    ["id", "provider", "email", "linked", "last used"],
                    try decode(ItemList<LinkedIdentity>.self, data).items.map {
                        [
                            $0.id.uuidString.lowercased(), $0.provider, $0.email ?? "", shortDate($0.linkedAt),
                            $0.lastUsedAt.map(shortDate) ?? "",
                        ]
                    })
            }
        }
    case "whoami":
        try arguments.finish()
        let data = try await pier.call("GET", "/auth/me")
        if json {
            printJSON(data)
        } else {
            let user = try decode(User.self, data)
            table(
                ["id", "email", "name", "role", "since"],
                [[user.id.uuidString.lowercased(), user.email, user.displayName ?? "", user.role, shortDate(user.createdAt)]])
        }
    case "feedback":
        try await feedback(&arguments, pier, json: json)
    case "status":
        try arguments.finish()
        let data = try await pier.call("GET", "/subscriptions/me")
        if json { printJSON(data) } else { printStatus(try decode(SubscriptionStatus.self, data)) }
    case "plans":
        try arguments.finish()
        let data = try await pier.call("GET", "/subscriptions/plans", signedIn: false)
        if json { printJSON(data) } else { printPlans(try decode(ItemList<Plan>.self, data).items) }
    case "admin":
        try await admin(&arguments, pier, json: json)
    default:
        throw CLIError.usage("unknown command \"\(command)\"")
    }
    return 0
}

func feedback(_ arguments: inout Arguments, _ pier: PierClient, json: Bool) async throws {
    switch try arguments.next("send or list") {
    case "send":
        let message = try arguments.next("the message")
        let rating = try arguments.int("rating", in: 1...5)
        let category = arguments.option("category")
        let platform = arguments.option("platform")
        try arguments.finish()
        let item = try await pier.feedback.send(
            NewFeedback(message: message, rating: rating, category: category, platform: platform))
        if json { printJSON(try JSONEncoder.pier.encode(item)) } else { print("Sent: \(item.id.uuidString.lowercased())") }
    case "list":
        let query = try pageQuery(&arguments)
        try arguments.finish()
        let data = try await pier.call("GET", "/feedback/mine", query: query)
        if json { printJSON(data) } else { printPage(try decode(FeedbackPage.self, data), admin: false) }
    case let other:
        throw CLIError.usage("unknown feedback command \"\(other)\"")
    }
}

func pageQuery(_ arguments: inout Arguments) throws(CLIError) -> [URLQueryItem] {
    var query: [URLQueryItem] = []
    if let limit = try arguments.int("limit", in: 1...100) { query.append(URLQueryItem(name: "limit", value: String(limit))) }
    if let cursor = arguments.option("cursor") { query.append(URLQueryItem(name: "cursor", value: cursor)) }
    return query
}

func printPage(_ page: FeedbackPage, admin: Bool) {
    let headers =
        admin
        ? ["id", "created", "status", "category", "rating", "moderation", "message"]
        : ["id", "created", "status", "category", "rating", "message"]
    table(
        headers,
        page.items.map { item in
            let message = item.message.count > 60 ? String(item.message.prefix(59)) + "…" : item.message
            var row = [
                item.id.uuidString.lowercased(), shortDate(item.createdAt), item.status, item.category,
                item.rating.map(String.init) ?? "",
            ]
            if admin { row.append(item.moderation ?? "") }
            return row + [message.replacingOccurrences(of: "\n", with: " ")]
        })
    if let next = page.nextCursor { print("more: --cursor \(next)") }
}

func printStatus(_ status: SubscriptionStatus) {
    table(
        ["status", "plan", "entitlements", "until", "renews", "source"],
        [
            [
                status.status, status.plan?.name ?? "", status.entitlements.map(\.key).joined(separator: ","),
                shortDate(status.currentPeriodEnd), status.willRenew ? "yes" : "no", status.source ?? "",
            ]
        ])
}

func printPlans(_ plans: [Plan]) {
    table(
        ["id", "name", "price", "period", "entitlements", "active"],
        plans.map { plan in
            [
                plan.id, plan.name, "\(plan.price) \(plan.currency)", plan.billingPeriod,
                plan.entitlements.joined(separator: ","), plan.active ? "yes" : "no",
            ]
        })
}

func admin(_ arguments: inout Arguments, _ pier: PierClient, json: Bool) async throws {
    switch try arguments.next("feedback, plans, grant or user") {
    case "feedback":
        try await adminFeedback(&arguments, pier, json: json)
    case "plans":
        try await adminPlans(&arguments, pier, json: json)
    case "grant":
        let user = try arguments.next("the user id")
        let plan = try arguments.next("the plan id")
        let duration = arguments.option("duration")
        let until = arguments.option("until")
        guard let reason = arguments.option("reason") else { throw CLIError.usage("--reason is required") }
        try arguments.finish()
        let data = try await pier.call(
            "POST", "/subscriptions/grants",
            json: body(["userId": user, "planId": plan, "duration": duration, "until": until, "reason": reason]))
        if json {
            printJSON(data)
        } else {
            let grant = try decode(Grant.self, data)
            print("Granted \(grant.planId) until \(shortDate(grant.endsAt)) (grant \(grant.id.uuidString.lowercased()))")
        }
    case "user":
        let user = try arguments.next("the user id")
        let refresh = arguments.flag("refresh")
        try arguments.finish()
        let data =
            refresh
            ? try await pier.call("POST", "/subscriptions/users/\(user)/appstore/refresh")
            : try await pier.call("GET", "/subscriptions/users/\(user)")
        if json {
            printJSON(data)
        } else {
            let history = try decode(SubscriptionHistory.self, data)
            printStatus(history.subscription)
            table(["at", "kind", "reference"], history.facts.map { [shortDate($0.at), $0.kind, $0.reference] })
        }
    case let other:
        throw CLIError.usage("unknown admin command \"\(other)\"")
    }
}

func adminFeedback(_ arguments: inout Arguments, _ pier: PierClient, json: Bool) async throws {
    switch try arguments.next("list, show, update or export") {
    case "list":
        var query = try pageQuery(&arguments)
        for name in ["status", "category", "platform", "q", "moderation", "appVersion"] {
            if let value = arguments.option(name) { query.append(URLQueryItem(name: name, value: value)) }
        }
        try arguments.finish()
        let data = try await pier.call("GET", "/feedback", query: query)
        if json { printJSON(data) } else { printPage(try decode(FeedbackPage.self, data), admin: true) }
    case "show":
        let id = try arguments.next("the feedback id")
        try arguments.finish()
        let data = try await pier.call("GET", "/feedback/\(id)")
        if json {
            printJSON(data)
        } else {
            let item = try decode(FeedbackItem.self, data)
            let fields: [(String, String?)] = [
                ("id", item.id.uuidString.lowercased()), ("created", shortDate(item.createdAt)), ("status", item.status),
                ("category", item.category), ("rating", item.rating.map(String.init)), ("moderation", item.moderation),
                ("platform", item.platform), ("app", item.appVersion), ("device", item.device),
                ("user", item.userId?.uuidString.lowercased()),
                ("name", item.name), ("email", item.email), ("tags", item.tags?.joined(separator: ",")),
                ("note", item.internalNote),
                ("message", item.message),
            ]
            for (name, value) in fields where !(value ?? "").isEmpty {
                print("\(name.padding(toLength: 10, withPad: " ", startingAt: 0)) \(value!)")
            }
        }
    case "update":
        let id = try arguments.next("the feedback id")
        let patch: [String: Any?] = [
            "status": arguments.option("status"), "duplicateOf": arguments.option("duplicate-of"), "tags": arguments.list("tags"),
            "internalNote": arguments.option("note"), "moderation": arguments.option("moderation"),
        ]
        try arguments.finish()
        guard patch.values.contains(where: { $0 != nil }) else { throw CLIError.usage("nothing to update") }
        let data = try await pier.call("PATCH", "/feedback/\(id)", json: body(patch))
        if json { printJSON(data) } else { print("Updated \(try decode(FeedbackItem.self, data).id.uuidString.lowercased())") }
    case "export":
        let format = arguments.option("format") ?? "csv"
        guard format == "csv" || format == "ndjson" else { throw CLIError.usage("--format must be csv or ndjson") }
        let output = arguments.option("output")
        try arguments.finish()
        try await export(pier, format: format, to: output)
    case let other:
        throw CLIError.usage("unknown admin feedback command \"\(other)\"")
    }
}

func adminPlans(_ arguments: inout Arguments, _ pier: PierClient, json: Bool) async throws {
    let action = try arguments.next("create, update or deactivate")
    let id = try arguments.next("the plan id")
    switch action {
    case "create", "update":
        let fields: [String: Any?] = [
            "id": action == "create" ? id : nil, "name": arguments.option("name"), "description": arguments.option("description"),
            "price": try arguments.int("price", in: 0...100_000_000), "currency": arguments.option("currency"),
            "billingPeriod": arguments.option("period"), "trialPeriod": arguments.option("trial"),
            "entitlements": arguments.list("entitlements"), "appStoreProductIds": arguments.list("products"),
            "active": try arguments.bool("active"),
        ]
        try arguments.finish()
        let data =
            action == "create"
            ? try await pier.call("POST", "/subscriptions/plans", json: body(fields))
            : try await pier.call("PATCH", "/subscriptions/plans/\(id)", json: body(fields))
        if json { printJSON(data) } else { printPlans([try decode(Plan.self, data)]) }
    case "deactivate":
        try arguments.finish()
        let data = try await pier.call("PATCH", "/subscriptions/plans/\(id)", json: body(["active": false]))
        if json { printJSON(data) } else { print("Deactivated \(id)") }
    default:
        throw CLIError.usage("unknown admin plans command \"\(action)\"")
    }
}

/// Streams the export to `path` (or standard output) as it arrives, counting items on the
/// terminal; the body is never held whole.
func export(_ pier: PierClient, format: String, to path: String?) async throws {
    let output: FileHandle
    if let path {
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw CLIError.failed("cannot write \(path)", code: 1)
        }
        output = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    } else {
        output = FileHandle.standardOutput
    }
    var components = URLComponents(url: pier.baseURL.appendingPathComponent("/feedback/export"), resolvingAgainstBaseURL: false)
    components?.queryItems = [URLQueryItem(name: "format", value: format)]
    guard let url = components?.url else { throw CLIError.usage("--url does not make an export address") }
    var request = URLRequest(url: url)
    request.setValue("Bearer \(try await pier.auth.accessToken())", forHTTPHeaderField: "Authorization")
    let download = Download(output: output, header: format == "csv", progress: isatty(2) == 1)
    let session = URLSession(configuration: .ephemeral, delegate: download, delegateQueue: nil)
    defer { session.finishTasksAndInvalidate() }
    let outcome = await withCheckedContinuation { continuation in
        download.finished = { continuation.resume(returning: $0) }
        session.dataTask(with: request).resume()
    }
    if path != nil { try output.close() }
    switch outcome {
    case .failure(let message): throw CLIError.failed(message, code: 6)
    case .refused(let status, let body):
        let problem = try? decoder.decode(Problem.self, from: body)
        throw CLIError.failed(problem?.detail ?? "the server answered \(status)", code: status == 401 || status == 403 ? 3 : 1)
    case .done(let items, let bytes):
        if download.progress || path != nil { standardError("\rexported \(items) items (\(bytes) bytes)") }
    }
}

/// Receives the export chunk by chunk (URLSession's delegate), writing each as it comes.
final class Download: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    enum Outcome { case done(items: Int, bytes: Int), refused(Int, Data), failure(String) }

    let output: FileHandle
    let header: Bool
    let progress: Bool
    var finished: ((Outcome) -> Void)?
    private var status = 0
    private var refusal = Data()
    private var lines = 0
    private var bytes = 0
    private var lastShown = Date.distantPast

    init(output: FileHandle, header: Bool, progress: Bool) {
        self.output = output
        self.header = header
        self.progress = progress
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        status = (response as? HTTPURLResponse)?.statusCode ?? 0
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard status == 200 else {
            refusal.append(data)
            return
        }
        output.write(data)
        bytes += data.count
        lines += data.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
        if progress, Date().timeIntervalSince(lastShown) > 0.2 {
            lastShown = Date()
            FileHandle.standardError.write(Data("\r\(items) items…".utf8))
        }
    }

    private var items: Int { max(0, header ? lines - 1 : lines) }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let error {
            finished?(.failure("the export was cut off: \(error.localizedDescription)"))
        } else if status != 200 {
            finished?(.refused(status, refusal))
        } else {
            finished?(.done(items: items, bytes: bytes))
        }
        finished = nil
    }
}

extension JSONEncoder {
    static let pier: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()
}

let parsed: Arguments
do {
    parsed = try Arguments(Array(CommandLine.arguments.dropFirst()))
} catch {
    if case .usage(let message) = error { standardError("pier: \(message) (pier --help)") }
    exit(2)
}
do {
    exit(try await run(parsed))
} catch let error as PierError {
    standardError("pier: \(error.detail)" + (error.code.map { " [\($0)]" } ?? ""))
    for field in error.fieldErrors { standardError("  \(field.field): \(field.message)") }
    if let retryAfter = error.retryAfter { standardError("  try again in \(Int(retryAfter)) s") }
    exit(CLIError.exitCode(error))
} catch CLIError.usage(let message) {
    standardError("pier: \(message) (pier --help)")
    exit(2)
} catch CLIError.failed(let message, let code) {
    standardError("pier: \(message)")
    exit(code)
}
