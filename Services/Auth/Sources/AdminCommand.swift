import PierIdentity
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `pier-auth create-admin --email <address> [--name "Maya Lind"] [--promote-existing]`: creates an
/// admin account (the name is what the team and the users the admin answers see).
/// The password comes from `PIER_ADMIN_PASSWORD` or the first line of standard input — never
/// from the command line, where `ps` would show it.
///
/// Run again for an admin's address, it replaces the password and ends the admin's sessions.
/// An address that already has a user account is refused unless `--promote-existing` is given:
/// whoever registered it may not be the person who is meant to be admin, and a session of theirs
/// would refresh into an admin token. With the flag the account becomes an admin with the new
/// password, its address verified, and everything someone else could still hold is taken away
/// first: every session ends, identities are unlinked, pending mailed links are void.
enum AdminCommand {
    static let createAdmin = ServiceCommand(
        name: "create-admin",
        usage:
            "create-admin --email <address> [--name \"Maya Lind\"] [--promote-existing]   (password from PIER_ADMIN_PASSWORD or stdin)"
    ) { arguments, context in
        guard let flag = arguments.firstIndex(of: "--email"), flag + 1 < arguments.count,
            let email = EmailAddress(arguments[flag + 1])
        else { throw CommandError(description: "create-admin needs --email <address>") }
        let promote = arguments.contains("--promote-existing")
        var name: String? = nil
        if let flag = arguments.firstIndex(of: "--name") {
            guard flag + 1 < arguments.count else { throw CommandError(description: "--name needs a name") }
            var errors: [Problem.FieldError] = []
            name = Names.clean(arguments[flag + 1], field: "name", into: &errors)
            if let problem = errors.first { throw CommandError(description: "--name \(problem.message)") }
            if name?.isEmpty == true { name = nil }
        }
        let password = context.configuration.environment.string("PIER_ADMIN_PASSWORD") ?? readLine(strippingNewline: true) ?? ""
        let configuration = try AuthConfiguration(
            environment: context.configuration.environment, production: context.configuration.production,
            events: context.plugins.flatMap(\.events))
        let problems = PasswordPolicy(minimumLength: configuration.passwordMinimumLength)
            .problems(password, field: "password", email: email.address)
        guard problems.isEmpty else {
            throw CommandError(description: "password " + problems.map(\.message).joined(separator: "; "))
        }
        let hash = try configuration.hasher.hash(password)
        let accounts = Accounts(
            database: context.database,
            lifetimes: .init(refreshDays: configuration.refreshTokenTTLDays, accessTTL: configuration.accessTokenTTL),
            mails: Mails(appName: configuration.appName, publicURL: configuration.publicURL, from: configuration.mailFrom))
        switch try await accounts.makeAdmin(email: email, passwordHash: hash, name: name, promoteExisting: promote) {
        case .created(let id):
            context.logger.info("admin account created", [("user_id", .string(id.text()))])
            print("admin \(email.address) ready (id \(id.text()))")
        case .promoted(let id, let sessions):
            context.logger.info(
                "account made admin; its sessions ended", [("user_id", .string(id.text())), ("sessions", .int(sessions))])
            print("admin \(email.address) ready (id \(id.text())): an existing account, \(sessions) session(s) ended")
        case .exists(let id, let sessions):
            throw CommandError(
                description: """
                    an account with \(email.address) exists already (id \(id.text()), \(sessions) live session(s)); \
                    whoever registered it may not be you. To make it an admin anyway — its sessions ended, its \
                    identities unlinked, its mailed links void, its password the one given — run again with \
                    --promote-existing
                    """)
        }
    }
}

extension AdminCommand {
    /// `pier-auth set-role --email <address> --role user|support|admin`: the operator's way to
    /// give or take a team role (the console's, for admins, is the same use case). The account's
    /// sessions end, whoever holds them; a team role needs a verified address; the last admin
    /// stays one. Recorded in the audit log as the operator's.
    static let setRole = ServiceCommand(
        name: "set-role", usage: "set-role --email <address> --role user|support|admin"
    ) { arguments, context in
        func value(_ flag: String) -> String? {
            guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
            return arguments[index + 1]
        }
        guard let email = value("--email").flatMap(EmailAddress.init) else {
            throw CommandError(description: "set-role needs --email <address>")
        }
        guard let role = value("--role").flatMap(AccountRole.init(rawValue:)) else {
            throw CommandError(description: "set-role needs --role user, support or admin")
        }
        let configuration = try AuthConfiguration(
            environment: context.configuration.environment, production: context.configuration.production,
            events: context.plugins.flatMap(\.events))
        guard let id = try await Users(context.database).id(emailKey: email.key) else {
            throw CommandError(description: "no account has the address \(email.address)")
        }
        let staff = StaffActions(
            database: context.database,
            lifetimes: .init(refreshDays: configuration.refreshTokenTTLDays, accessTTL: configuration.accessTokenTTL))
        switch try await staff.setRole(of: id, to: role, by: .commandLine) {
        case .missing: throw CommandError(description: "no account has the address \(email.address)")
        case .unchanged: print("\(email.address) is \(role.rawValue) already")
        case .addressUnverified:
            throw CommandError(description: "\(email.address) has never verified its address: a team role needs one that did")
        case .anonymous:
            throw CommandError(description: "\(email.address) is an anonymous account: a team role needs a permanent one")
        case .lastAdmin: throw CommandError(description: "\(email.address) is the last admin; make another admin first")
        case .changed(_, let ended):
            context.logger.info(
                "role changed", [("user_id", .string(id.text())), ("role", .string(role.rawValue)), ("sessions", .int(ended))])
            print("\(email.address) is now \(role.rawValue) (id \(id.text())); \(ended) session(s) ended")
        }
    }
}

struct CommandError: Error, CustomStringConvertible {
    let description: String
}
