import Foundation
import PierClient
import PierModels

/// `register`, `login`, `sign-in`, `logout`, `whoami`, `profile`, `email …`, `password …`,
/// `identities …`, `sessions …`, `export`, `delete-account`: the account, as its owner uses it.
enum AccountCommands {
    static let names: Set<String> = [
        "register", "login", "sign-in", "logout", "whoami", "profile", "email", "password", "identities", "sessions",
        "export", "delete-account",
    ]

    static func run(_ command: String, _ arguments: inout Arguments, _ pier: PierClient, _ output: Output) async throws {
        let auth = pier.auth
        switch command {
        case "register", "login":
            let email = try arguments.next("an email address")
            let name = command == "register" ? arguments.option("name") : nil
            let device = arguments.option("device") ?? defaultDevice
            try arguments.finish()
            let secret = try password(arguments)
            let user =
                command == "register"
                ? try await auth.register(email: email, password: secret, displayName: name, deviceName: device)
                : try await auth.login(email: email, password: secret, deviceName: device)
            try output.show(user, signedIn)
        case "sign-in":
            let provider = try arguments.next("a provider (apple, or an OpenID Connect provider's name)")
            let token = try arguments.next("the ID token")
            guard let nonce = arguments.option("nonce") else { throw CLIError.usage("--nonce RAW is required") }
            let name = arguments.option("name")
            let device = arguments.option("device") ?? defaultDevice
            try arguments.finish()
            let user = try await auth.signIn(
                provider: provider, identityToken: token, nonce: nonce, fullName: name, deviceName: device)
            try output.show(user, signedIn)
        case "logout":
            let everywhere = arguments.flag("all")
            try arguments.finish()
            if everywhere {
                try await auth.logoutEverywhere()
                output.say("Signed out everywhere")
            } else {
                await auth.logout()
                output.say("Signed out")
            }
        case "whoami":
            try arguments.finish()
            try output.show(try await auth.me()) { user in
                table(
                    ["id", "email", "name", "role", "since"],
                    [
                        [
                            user.id.uuidString.lowercased(), user.email, user.displayName ?? "", user.role.rawValue,
                            shortDate(user.createdAt),
                        ]
                    ])
            }
        case "profile":
            let name = arguments.option("name")
            let locale = arguments.option("locale")
            try arguments.finish()
            guard name != nil || locale != nil else { throw CLIError.usage("give --name or --locale") }
            try output.show(try await auth.updateProfile(displayName: name, locale: locale)) { user in
                print("Name: \(user.displayName ?? "(none)"), locale: \(user.locale ?? "(none)")")
            }
        case "email":
            try await email(&arguments, auth, output)
        case "password":
            switch try arguments.next("forgot or reset") {
            case "forgot":
                let email = try arguments.next("an email address")
                try arguments.finish()
                try await auth.forgotPassword(email: email)
                output.say("If an account has this address, a mail with a link is on its way.")
            case "reset":
                let token = try mailedToken(arguments.next("the mailed link or its token"))
                try arguments.finish()
                try await auth.resetPassword(token: token, newPassword: try password(arguments))
                output.say("Password changed; every session ended. Sign in with the new one.")
            case let other:
                throw CLIError.usage("unknown password command \"\(other)\"")
            }
        case "identities":
            if let action = arguments.nextIfAny() {
                guard action == "unlink" else { throw CLIError.usage("unknown identities command \"\(action)\"") }
                let id = try arguments.nextID("the identity id")
                try arguments.finish()
                try await auth.unlinkIdentity(id, password: try? password(arguments))
                output.say("Unlinked")
            } else {
                try arguments.finish()
                try output.show(ItemList(try await auth.identities())) { list in
                    table(
                        ["id", "provider", "email", "linked", "last used"],
                        list.items.map {
                            [
                                $0.id.uuidString.lowercased(), $0.provider, $0.email ?? "", shortDate($0.linkedAt),
                                $0.lastUsedAt.map(shortDate) ?? "",
                            ]
                        })
                }
            }
        case "sessions":
            if let action = arguments.nextIfAny() {
                guard action == "end" else { throw CLIError.usage("unknown sessions command \"\(action)\"") }
                let id = try arguments.nextID("the session id")
                try arguments.finish()
                try await auth.endSession(id)
                output.say("Session ended")
            } else {
                try arguments.finish()
                try output.show(ItemList(try await auth.sessions())) { list in
                    table(
                        ["id", "device", "address", "signed in", "last used", ""],
                        list.items.map {
                            [
                                $0.id.uuidString.lowercased(), $0.deviceName ?? "", $0.clientAddress ?? "",
                                shortDate($0.createdAt), $0.lastUsedAt.map(shortDate) ?? "", $0.current ? "(this one)" : "",
                            ]
                        })
                }
            }
        case "export":
            let path = arguments.option("output")
            try arguments.finish()
            let data = try await auth.exportData()
            if let path {
                try data.write(to: URL(fileURLWithPath: path), options: .atomic)
                output.say("Written to \(path) (\(data.count) bytes)")
            } else {
                output.raw(data)
            }
        case "delete-account":
            try arguments.finish()
            try await auth.deleteAccount(password: try? password(arguments))
            output.say("Account deleted")
        default:
            throw CLIError.usage("unknown command \"\(command)\"")
        }
    }

    /// `email verify | change | confirm | cancel | resend`.
    static func email(_ arguments: inout Arguments, _ auth: PierAuth, _ output: Output) async throws {
        switch try arguments.next("verify, resend, change, confirm or cancel") {
        case "verify":
            let token = try mailedToken(arguments.next("the mailed link or its token"))
            try arguments.finish()
            try output.show(try await auth.verifyEmail(token: token)) { print("Verified: \($0.email)") }
        case "change":
            let newEmail = try arguments.next("the new address")
            try arguments.finish()
            try await auth.changeEmail(to: newEmail, password: try? password(arguments))
            output.say("A confirmation link was mailed to \(newEmail); the address changes once it is opened.")
        case "confirm":
            let token = try mailedToken(arguments.next("the mailed link or its token"))
            try arguments.finish()
            try output.show(try await auth.confirmEmailChange(token: token)) { print("Your address is now \($0.email)") }
        case "cancel":
            let token = try mailedToken(arguments.next("the mailed link or its token"))
            try arguments.finish()
            try output.show(try await auth.cancelEmailChange(token: token)) {
                print("Change cancelled: your address stays \($0.email); the device that asked was signed out.")
            }
        case "resend":
            let email = arguments.nextIfAny()
            try arguments.finish()
            try await auth.resendVerification(email: email)
            output.say("If the account exists and is not verified yet, a mail is on its way.")
        case let other:
            throw CLIError.usage("unknown email command \"\(other)\"")
        }
    }

    static var defaultDevice: String { "pier on \(ProcessInfo.processInfo.hostName)" }

    static func signedIn(_ user: User) { print("Signed in as \(user.email) (\(user.id.uuidString.lowercased()))") }
}
