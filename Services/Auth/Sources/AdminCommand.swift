import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `pier-auth create-admin --email <address>`: creates an admin account, or makes an existing
/// account an admin with the new password. The password comes from `PIER_ADMIN_PASSWORD` or
/// the first line of standard input — never from the command line, where `ps` would show it.
enum AdminCommand {
    static let createAdmin = ServiceCommand(
        name: "create-admin",
        usage: "create-admin --email <address>   (password from PIER_ADMIN_PASSWORD or stdin)"
    ) { arguments, context in
        guard let flag = arguments.firstIndex(of: "--email"), flag + 1 < arguments.count,
            let email = EmailAddress(arguments[flag + 1])
        else { throw CommandError(description: "create-admin needs --email <address>") }
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
        let rows = try await context.database.query(
            """
            INSERT INTO auth.users (id, email, email_key, password_hash, role)
            VALUES (\(UUID()), \(email.address), \(email.key), \(hash), 'admin')
            ON CONFLICT (email_key) DO UPDATE SET role = 'admin', password_hash = excluded.password_hash, updated_at = now()
            RETURNING id
            """)
        let id = try rows[0].decode("id", as: UUID.self)
        context.logger.info("admin account ready", [("user_id", .string(id.text()))])
        print("admin \(email.address) ready (id \(id.text()))")
    }
}

struct CommandError: Error, CustomStringConvertible {
    let description: String
}
