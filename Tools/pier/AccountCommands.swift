import Foundation
import PierClient
import PierModels

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `register`, `login`, `sign-in`, `logout`, `whoami`, `profile`, `email …`, `password …`,
/// `identities …`, `sessions …`, `export`, `delete-account`: the account, as its owner uses it.
enum AccountCommands {
    static let names: Set<String> = [
        "register", "login", "sign-in", "logout", "whoami", "profile", "email", "password", "identities", "sessions",
        "export", "delete-account", "mfa", "passkeys",
    ]

    static func run(_ command: String, _ arguments: inout Arguments, _ pier: PierClient, _ output: Output) async throws {
        let auth = pier.auth
        switch command {
        case "register", "login":
            try await signIn(command, &arguments, auth, output)
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
                            user.id.uuidString.lowercased(), user.handle, user.displayName ?? "", user.role.rawValue,
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
            try await passwordCommand(&arguments, auth, output)
        case "identities":
            try await identities(&arguments, auth, output)
        case "sessions":
            try await sessions(&arguments, auth, output)
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
            let code = arguments.option("code")
            try arguments.finish()
            try await auth.deleteAccount(password: code == nil ? try? password(arguments) : nil, code: code)
            output.say("Account deleted")
        case "mfa":
            try await twoStep(&arguments, auth, output)
        case "passkeys":
            try await passkeys(&arguments, auth, output)
        default:
            throw CLIError.usage("unknown command \"\(command)\"")
        }
    }

    /// `register` and `login`: signed in with a password (and a code, with two-step sign-in).
    static func signIn(_ command: String, _ arguments: inout Arguments, _ auth: PierAuth, _ output: Output) async throws {
        let email = try arguments.next("an email address")
        let name = command == "register" ? arguments.option("name") : nil
        let device = arguments.option("device") ?? defaultDevice
        let code = arguments.option("code")
        try arguments.finish()
        let secret = try password(arguments)
        let user = try await askingForACode(code, auth) { () async throws(PierError) -> User in
            command == "register"
                ? try await auth.register(email: email, password: secret, displayName: name, deviceName: device)
                : try await auth.login(email: email, password: secret, deviceName: device)
        }
        try output.show(user, signedIn)
    }

    /// `password forgot | reset`.
    static func passwordCommand(_ arguments: inout Arguments, _ auth: PierAuth, _ output: Output) async throws {
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
    }

    /// `identities [unlink ID]`.
    static func identities(_ arguments: inout Arguments, _ auth: PierAuth, _ output: Output) async throws {
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
    }

    /// `sessions [end ID]`.
    static func sessions(_ arguments: inout Arguments, _ auth: PierAuth, _ output: Output) async throws {
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
    }

    /// `passkeys [rename ID NAME | remove ID]`.
    static func passkeys(_ arguments: inout Arguments, _ auth: PierAuth, _ output: Output) async throws {
        switch arguments.nextIfAny() {
        case nil:
            try arguments.finish()
            try output.show(ItemList(try await auth.passkeys())) { list in
                table(
                    ["id", "name", "added", "last used", ""],
                    list.items.map {
                        [
                            $0.id.uuidString.lowercased(), $0.name, shortDate($0.createdAt),
                            $0.lastUsedAt.map(shortDate) ?? "",
                            $0.suspended ? "(suspended)" : $0.backedUp ? "(synced)" : "",
                        ]
                    })
            }
        case "rename":
            let id = try arguments.nextID("the passkey id")
            let name = try arguments.next("the new name")
            try arguments.finish()
            try output.show(try await auth.renamePasskey(id, to: name)) { print("Renamed: \($0.name)") }
        case "remove":
            let id = try arguments.nextID("the passkey id")
            let code = arguments.option("code")
            try arguments.finish()
            try await auth.removePasskey(id, password: code == nil ? try? password(arguments) : nil, code: code)
            output.say("Passkey removed")
        case let other?:
            throw CLIError.usage("unknown passkeys command \"\(other)\"")
        }
    }

    /// `email verify | change | confirm | cancel | resend`.
    static func email(_ arguments: inout Arguments, _ auth: PierAuth, _ output: Output) async throws {
        switch try arguments.next("verify, resend, change, confirm or cancel") {
        case "verify":
            let token = try mailedToken(arguments.next("the mailed link or its token"))
            try arguments.finish()
            try output.show(try await auth.verifyEmail(token: token)) { print("Verified: \($0.handle)") }
        case "change":
            let newEmail = try arguments.next("the new address")
            try arguments.finish()
            try await auth.changeEmail(to: newEmail, password: try? password(arguments))
            output.say("A confirmation link was mailed to \(newEmail); the address changes once it is opened.")
        case "confirm":
            let token = try mailedToken(arguments.next("the mailed link or its token"))
            try arguments.finish()
            try output.show(try await auth.confirmEmailChange(token: token)) { print("Your address is now \($0.handle)") }
        case "cancel":
            let token = try mailedToken(arguments.next("the mailed link or its token"))
            try arguments.finish()
            try output.show(try await auth.cancelEmailChange(token: token)) {
                print("Change cancelled: your address stays \($0.handle); the device that asked was signed out.")
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

    /// `mfa [enrol | disable | recovery-codes]`: two-step sign-in with an authenticator app.
    static func twoStep(_ arguments: inout Arguments, _ auth: PierAuth, _ output: Output) async throws {
        let action = arguments.nextIfAny()
        let code = arguments.option("code")
        switch action {
        case nil:
            try arguments.finish()
            try output.show(try await auth.twoStepStatus()) { status in
                if let since = status.totpEnabledAt {
                    print("Two-step sign-in is on since \(shortDate(since)); \(status.recoveryCodesLeft) recovery codes left.")
                } else {
                    print("Two-step sign-in is off (pier mfa enrol).")
                }
            }
        case "enrol", "enroll":
            let qrFile = arguments.option("qr")
            try arguments.finish()
            let setup = try await auth.setUpAuthenticatorApp(password: try? password(arguments))
            if let qrFile {
                try Data(setup.qrCode.utf8).write(to: URL(fileURLWithPath: qrFile), options: .atomic)
            }
            // A person types the app's first code at once; a script confirms it with `mfa confirm`.
            guard code != nil || isatty(0) == 1 else {
                try output.show(setup) { setup in
                    print("Add this to your authenticator app" + (qrFile.map { " (or scan the QR code in \($0))" } ?? "") + ":")
                    print("  " + setup.uri)
                    print("Then confirm its code: pier mfa confirm CODE")
                }
                return
            }
            standardError(
                "Add this to your authenticator app" + (qrFile.map { " (or scan the QR code in \($0))" } ?? "") + ":\n  "
                    + setup.uri + "\n  or type the key: " + setup.secret)
            try showRecoveryCodes(try await auth.confirmAuthenticatorApp(code: try oneTimeCode(code, prompt: "The app's code: ")))
        case "confirm":
            let given = try arguments.next("the app's code")
            try arguments.finish()
            try showRecoveryCodes(try await auth.confirmAuthenticatorApp(code: given))
        case "disable":
            try arguments.finish()
            try await auth.turnOffTwoStep(code: code ?? (try? oneTimeCode(nil)))
            output.say("Two-step sign-in is off.")
        case "recovery-codes":
            try arguments.finish()
            let codes = try await auth.newRecoveryCodes(code: code ?? (try? oneTimeCode(nil)))
            try output.show(RecoveryCodes(codes: codes)) { list in
                print("New recovery codes (the old ones no longer work):")
                for code in list.codes { print("  " + code) }
            }
        case let other?:
            throw CLIError.usage("unknown mfa command \"\(other)\"")
        }

        func showRecoveryCodes(_ codes: [String]) throws {
            try output.show(RecoveryCodes(codes: codes)) { list in
                print("Two-step sign-in is on; other devices were signed out. Keep these recovery codes (each works once):")
                for code in list.codes { print("  " + code) }
            }
        }
    }

    /// The user `signIn` signs in; when it answers `mfa_required`, completed with a code.
    static func askingForACode(_ code: String?, _ auth: PierAuth, _ signIn: () async throws(PierError) -> User)
        async throws -> User
    {
        let token: String
        do {
            return try await signIn()
        } catch {
            guard error.code == .mfaRequired, let mfaToken = error.mfaToken else { throw error }
            token = mfaToken
        }
        return try await auth.completeSignIn(mfaToken: token, code: try oneTimeCode(code))
    }

    /// A code from the authenticator app or a recovery code: `--code`, else `$PIER_MFA_CODE`,
    /// else asked on the terminal.
    static func oneTimeCode(_ given: String?, prompt: String = "Code (authenticator app or recovery code): ")
        throws(CLIError) -> String
    {
        if let given, !given.isEmpty { return given }
        if let code = environment["PIER_MFA_CODE"], !code.isEmpty { return code }
        guard isatty(0) == 1 else { throw .usage("give the code with --code or $PIER_MFA_CODE") }
        FileHandle.standardError.write(Data(prompt.utf8))
        guard let line = readLine(strippingNewline: true), !line.isEmpty else { throw .usage("no code given") }
        return line
    }

    static var defaultDevice: String { "pier on \(ProcessInfo.processInfo.hostName)" }

    static func signedIn(_ user: User) { print("Signed in as \(user.handle) (\(user.id.uuidString.lowercased()))") }
}
