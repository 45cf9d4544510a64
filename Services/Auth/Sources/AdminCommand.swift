import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `pier-auth create-admin --email <address> [--promote-existing]`: creates an admin account.
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
        usage: "create-admin --email <address> [--promote-existing]   (password from PIER_ADMIN_PASSWORD or stdin)"
    ) { arguments, context in
        guard let flag = arguments.firstIndex(of: "--email"), flag + 1 < arguments.count,
            let email = EmailAddress(arguments[flag + 1])
        else { throw CommandError(description: "create-admin needs --email <address>") }
        let promote = arguments.contains("--promote-existing")
        let password = context.configuration.environment.string("PIER_ADMIN_PASSWORD") ?? readLine(strippingNewline: true) ?? ""
        let configuration = try AuthConfiguration(
            environment: context.configuration.environment,
            production: context.configuration.production)
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
        switch try await accounts.makeAdmin(email: email, passwordHash: hash, promoteExisting: promote) {
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

struct CommandError: Error, CustomStringConvertible {
    let description: String
}
