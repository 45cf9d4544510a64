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

/// `admin …`: the team's commands (an account with the admin role), on ``PierAdmin``.
enum AdminCommands {
    static func run(_ arguments: inout Arguments, _ pier: PierClient, _ output: Output) async throws {
        let admin = pier.admin
        let command = try arguments.next(
            "feedback, plans, grant, revoke, users, user, sessions, mail, disable, enable, role, delete, export or audit")
        switch command {
        case "feedback":
            try await feedback(&arguments, admin, output)
        case "plans":
            try await plans(&arguments, admin, output)
        case "grant":
            try await grant(&arguments, admin, output)
        case "users":
            try await users(&arguments, admin, output)
        case "user":
            try await user(&arguments, admin, output)
        case "revoke":
            let grant = try arguments.nextID("the grant id")
            try arguments.finish()
            try output.show(try await admin.revokeGrant(grant)) { print("Revoked grant \($0.id.uuidString.lowercased())") }
        case "sessions":
            try await sessions(&arguments, admin, output)
        case "mail":
            let named = try arguments.next("the user (an address or an id)")
            let kind = try arguments.next("password-reset or verification")
            try arguments.finish()
            guard let mail = PierAdmin.AccountMail(rawValue: kind) else {
                throw CLIError.usage("the mail is password-reset or verification")
            }
            let user = try await admin.user(named: named)
            try await admin.send(mail, to: user.id)
            output.say("Mailed a \(kind) link to \(user.handle)")
        case "disable", "enable":
            let disable = command == "disable"
            let named = try arguments.next("the user (an address or an id)")
            try arguments.finish()
            let user = try await admin.setDisabled(try await admin.user(named: named).id, disable)
            try output.show(user) { print("\($0.handle) is \($0.disabledAt == nil ? "enabled" : "disabled")") }
        case "role":
            let named = try arguments.next("the user (an address or an id)")
            let given = try arguments.next("the role: user, support or admin")
            guard let role = AccountRole(rawValue: given) else { throw CLIError.usage("the role is user, support or admin") }
            let confirm = arguments.flag("password-stdin") || environment["PIER_PASSWORD"] != nil
            try arguments.finish()
            let user = try await admin.user(named: named).id
            let changed = try await admin.setRole(role, of: user, password: confirm ? try password(arguments) : nil)
            try output.show(changed) { print("\($0.handle) is now \($0.role); its sessions ended") }
        case "delete":
            let named = try arguments.next("the user (an address or an id)")
            let confirm = arguments.flag("password-stdin") || environment["PIER_PASSWORD"] != nil
            try arguments.finish()
            let user = try await admin.user(named: named)
            try await admin.deleteAccount(user.id, password: confirm ? try password(arguments) : nil)
            output.say("Deleted \(user.handle)")
        case "export":
            let named = try arguments.next("the user (an address or an id)")
            let path = arguments.option("output")
            try arguments.finish()
            let data = try await admin.exportData(of: try await admin.user(named: named).id)
            if let path {
                try data.write(to: URL(fileURLWithPath: path), options: .atomic)
                output.say("Written to \(path) (\(data.count) bytes)")
            } else {
                output.raw(data)
            }
        case "audit":
            try await audit(&arguments, admin, output)
        case let other:
            throw CLIError.usage("unknown admin command \"\(other)\"")
        }
    }

    /// `admin grant USER PLAN`: access to a plan for a while, with a reason.
    static func grant(_ arguments: inout Arguments, _ admin: PierAdmin, _ output: Output) async throws {
        let named = try arguments.next("the user (an address or an id)")
        let plan = try arguments.next("the plan id")
        let duration = arguments.option("duration")
        let until = try arguments.date("until")
        guard let reason = arguments.option("reason") else { throw CLIError.usage("--reason is required") }
        try arguments.finish()
        let user = try await admin.user(named: named).id
        let grant = try await admin.grant(
            CreateGrant(userId: user, planId: plan, duration: duration, until: until, reason: reason))
        try output.show(grant) {
            print("Granted \($0.planId) until \(shortDate($0.endsAt)) (grant \($0.id.uuidString.lowercased()))")
        }
    }

    /// `admin users QUERY`: the accounts that match.
    static func users(_ arguments: inout Arguments, _ admin: PierAdmin, _ output: Output) async throws {
        let query = try arguments.next("what to look for (an address or its start, a name's start, an id)")
        let limit = try arguments.int("limit", in: 1...100)
        try arguments.finish()
        try output.show(try await admin.users(matching: query, limit: limit)) { list in
            table(
                ["id", "email", "name", "role", "verified", "created"],
                list.items.map {
                    [
                        $0.id.uuidString.lowercased(), $0.handle, $0.displayName ?? "", $0.role.rawValue,
                        $0.emailVerified ? "yes" : "no",
                        shortDate($0.createdAt),
                    ]
                })
            if list.more { print("More accounts match: a longer query narrows them down.") }
        }
    }

    /// `admin user USER [--refresh] [--refresh-google]`: an account and its subscription.
    static func user(_ arguments: inout Arguments, _ admin: PierAdmin, _ output: Output) async throws {
        let named = try arguments.next("the user (an address or an id)")
        let (apple, google) = (arguments.flag("refresh"), arguments.flag("refresh-google"))
        try arguments.finish()
        let account = try await admin.user(named: named)
        var history = try await admin.subscription(of: account.id)
        if apple { history = try await admin.refreshFromAppStore(account.id) }
        if google { history = try await admin.refreshFromGooglePlay(account.id) }
        try output.show(AccountView(user: account, subscription: history)) { view in
            let user = view.user
            print("\(user.handle)\(user.emailVerified ? "" : " (address not verified)")  \(user.id.uuidString.lowercased())")
            print("name \(user.displayName ?? "-"), role \(user.role), since \(shortDate(user.createdAt))")
            if let disabled = user.disabledAt { print("disabled since \(shortDate(disabled)): it cannot sign in") }
            let history = view.subscription
            SubscriptionCommands.printStatus(history.subscription)
            table(["at", "kind", "reference"], history.facts.map { [shortDate($0.at), $0.kind, $0.reference] })
        }
    }

    /// `admin sessions USER [--end] [--session ID]`: its sessions, or end them.
    static func sessions(_ arguments: inout Arguments, _ admin: PierAdmin, _ output: Output) async throws {
        let named = try arguments.next("the user (an address or an id)")
        let end = arguments.flag("end")
        let only = try arguments.id("session")
        try arguments.finish()
        let user = try await admin.user(named: named).id
        if end || only != nil {
            let ended = try await admin.endSessions(of: user, only: only)
            try output.show(SessionsEnded(ended: ended)) { print("Ended \($0.ended) session(s)") }
        } else {
            try output.show(try await admin.sessions(of: user)) { sessions in
                table(
                    ["id", "device", "address", "created", "last used"],
                    sessions.map {
                        [
                            $0.id.uuidString.lowercased(), $0.deviceName ?? "", $0.clientAddress ?? "",
                            shortDate($0.createdAt),
                            shortDate($0.lastUsedAt),
                        ]
                    })
            }
        }
    }

    /// `admin audit SERVICE`: what the team did, newest first.
    static func audit(_ arguments: inout Arguments, _ admin: PierAdmin, _ output: Output) async throws {
        let service = try arguments.next("the service: auth, feedback or subscriptions")
        var subject: UUID? = nil
        if let named = arguments.option("user") { subject = try await admin.user(named: named).id }
        let filter = PierAdmin.AuditFilter(
            subject: subject, actor: try arguments.id("actor"), target: arguments.option("target"),
            before: try arguments.int("before", in: 1...Int.max).map(Int64.init),
            limit: try arguments.int("limit", in: 1...200))
        try arguments.finish()
        try output.show(try await admin.audit(service, filter)) { list in
            table(
                ["at", "actor", "action", "target", "change"],
                list.items.map {
                    [
                        shortDate($0.at), ($0.actorId?.uuidString.lowercased() ?? "operator") + " (\($0.actorRole))",
                        $0.action.rawValue, $0.targetId, describe($0.before, $0.after),
                    ]
                })
            if let next = list.next { print("More: --before \(next)") }
        }
    }

    /// An audit entry's change on one line: `field: before → after` for what changed.
    static func describe(_ before: JSONValue?, _ after: JSONValue?) -> String {
        let old = before?.objectValue ?? [:]
        let new = after?.objectValue ?? [:]
        return Set(old.keys).union(new.keys).sorted().map { key in
            "\(key): \(brief(old[key])) → \(brief(new[key]))"
        }.joined(separator: "; ")
    }

    private static func brief(_ value: JSONValue?) -> String {
        switch value {
        case nil, .null?: "-"
        case .string(let text)?: text.count > 40 ? String(text.prefix(39)) + "…" : text
        case .bool(let flag)?: String(flag)
        case .number(let number)?: JSONValue.text(of: number)
        case .array(let items)?: items.map { brief($0) }.joined(separator: ",")
        case .object?: "{…}"
        }
    }

    /// `admin user`'s answer with `--json`: the account and its subscription.
    struct AccountView: Encodable {
        let user: User
        let subscription: SubscriptionHistory
    }

    /// `admin feedback list | show | update | export`.
    static func feedback(_ arguments: inout Arguments, _ admin: PierAdmin, _ output: Output) async throws {
        switch try arguments.next("list, show, update, reply or export") {
        case "list":
            let filter = PierAdmin.FeedbackFilter(
                status: arguments.option("status"), category: arguments.option("category"),
                platform: arguments.option("platform"), appVersion: arguments.option("app-version"),
                text: arguments.option("q"), moderation: arguments.option("moderation"),
                limit: try arguments.int("limit", in: 1...100), cursor: arguments.option("cursor"))
            try arguments.finish()
            try output.show(try await admin.feedback(filter)) { FeedbackCommands.printPage($0, admin: true) }
        case "show":
            let id = try arguments.nextID("the feedback id")
            try arguments.finish()
            try output.show(try await admin.feedbackItem(id)) { item in
                let fields: [(String, String?)] = [
                    ("id", item.id.uuidString.lowercased()), ("created", shortDate(item.createdAt)),
                    ("status", item.status.rawValue),
                    ("category", item.category.rawValue), ("rating", item.rating.map(String.init)),
                    ("moderation", item.moderation?.rawValue),
                    ("platform", item.platform?.rawValue), ("app", item.appVersion), ("device", item.device),
                    ("user", item.userId?.uuidString.lowercased()), ("name", item.name), ("email", item.email),
                    ("tags", item.tags?.joined(separator: ",")), ("note", item.internalNote), ("message", item.message),
                ]
                for (name, value) in fields where !(value ?? "").isEmpty {
                    print("\(name.padding(toLength: 10, withPad: " ", startingAt: 0)) \(value!)")
                }
                for reply in item.replies ?? [] {
                    print("reply      \(shortDate(reply.createdAt)) (\(reply.delivery ?? "-")): \(reply.message)")
                }
            }
        case "reply":
            let id = try arguments.nextID("the feedback id")
            let message = try arguments.next("the reply")
            try arguments.finish()
            try output.show(try await admin.reply(to: id, message)) { reply in
                let delivery =
                    switch reply.delivery {
                    case "account": "shown in the sender's app, mailed if their address is verified"
                    case "address": "mailed to the sender's address"
                    default: "kept with the item only: the sender cannot be reached"
                    }
                print("Replied (\(reply.id.uuidString.lowercased())): \(delivery)")
            }
        case "update":
            let id = try arguments.nextID("the feedback id")
            let change = UpdateFeedback(
                status: arguments.option("status"), duplicateOf: try arguments.id("duplicate-of"), tags: arguments.list("tags"),
                internalNote: arguments.option("note"), moderation: arguments.option("moderation"))
            try arguments.finish()
            guard
                change.status != nil || change.duplicateOf != nil || change.tags != nil || change.internalNote != nil
                    || change.moderation != nil
            else { throw CLIError.usage("nothing to update") }
            try output.show(try await admin.updateFeedback(id, change)) { print("Updated \($0.id.uuidString.lowercased())") }
        case "export":
            let format = arguments.option("format") ?? "csv"
            guard format == "csv" || format == "ndjson" else { throw CLIError.usage("--format must be csv or ndjson") }
            let path = arguments.option("output")
            try arguments.finish()
            try await export(try await admin.feedbackExportRequest(format: format), header: format == "csv", to: path)
        case let other:
            throw CLIError.usage("unknown admin feedback command \"\(other)\"")
        }
    }

    /// `admin plans create | update | deactivate ID`.
    static func plans(_ arguments: inout Arguments, _ admin: PierAdmin, _ output: Output) async throws {
        let action = try arguments.next("create, update or deactivate")
        let id = try arguments.next("the plan id")
        switch action {
        case "create", "update":
            let change = UpdatePlan(
                name: arguments.option("name"), description: arguments.option("description"),
                price: try arguments.int("price", in: 0...100_000_000), currency: arguments.option("currency"),
                billingPeriod: arguments.option("period"), trialPeriod: arguments.option("trial"),
                entitlements: arguments.list("entitlements"), appStoreProductIds: arguments.list("products"),
                googleProductIds: arguments.list("google-products"), active: try arguments.bool("active"))
            try arguments.finish()
            let plan: Plan
            if action == "create" {
                guard let name = change.name, let price = change.price, let currency = change.currency,
                    let period = change.billingPeriod
                else { throw CLIError.usage("a new plan needs --name, --price, --currency and --period") }
                plan = try await admin.createPlan(
                    CreatePlan(
                        id: id, name: name, description: change.description, price: price, currency: currency,
                        billingPeriod: period, trialPeriod: change.trialPeriod, entitlements: change.entitlements ?? [],
                        appStoreProductIds: change.appStoreProductIds, googleProductIds: change.googleProductIds,
                        active: change.active))
            } else {
                plan = try await admin.updatePlan(id, change)
            }
            try output.show(plan) { SubscriptionCommands.printPlans([$0]) }
        case "deactivate":
            try arguments.finish()
            try output.show(try await admin.updatePlan(id, UpdatePlan(active: false))) { print("Deactivated \($0.id)") }
        default:
            throw CLIError.usage("unknown admin plans command \"\(action)\"")
        }
    }
}
