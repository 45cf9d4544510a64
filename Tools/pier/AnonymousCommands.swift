import Foundation
import PierClient
import PierModels

/// `anonymous`, `keep EMAIL`, `merge EMAIL`: starting without signing up, then keeping the
/// account with an address, or bringing it into the account that has the address.
enum AnonymousCommands {
    static let names: Set<String> = ["anonymous", "keep", "merge"]

    static func run(_ command: String, _ arguments: inout Arguments, _ pier: PierClient, _ output: Output) async throws {
        let auth = pier.auth
        switch command {
        case "anonymous":
            let device = arguments.option("device") ?? AccountCommands.defaultDevice
            try arguments.finish()
            try output.show(try await auth.signInAnonymously(deviceName: device), AccountCommands.signedIn)
        case "keep":
            let email = try arguments.next("an email address")
            try arguments.finish()
            let sentTo = try await keep(auth, email: email, password: try password(arguments))
            output.say("A link went to \(sentTo): open it to keep this account with that address and password.")
        case "merge":
            let email = try arguments.next("the address of the account to merge into")
            let code = arguments.option("code")
            let device = arguments.option("device") ?? AccountCommands.defaultDevice
            try arguments.finish()
            let secret = try password(arguments)
            let answer = try await auth.merge { () async throws(PierError) in
                try await signIn(auth, email: email, password: secret, device: device, code: code)
            }
            try output.show(answer) { answer in
                print(
                    "Merged: what the anonymous account held is \(email)'s now (\(answer.userId.uuidString.lowercased())); signed in to it"
                )
            }
        default:
            throw CLIError.usage("unknown command \"\(command)\"")
        }
    }

    /// Signs in to `email` with its password, and with the code (given, or asked on the terminal)
    /// when two-step sign-in is on.
    static func signIn(_ auth: PierAuth, email: String, password: String, device: String, code: String?)
        async throws(PierError)
    {
        do throws(PierError) {
            _ = try await auth.login(email: email, password: password, deviceName: device)
        } catch {
            guard error.code == .mfaRequired, let token = error.mfaToken, let given = try? AccountCommands.oneTimeCode(code)
            else { throw error }
            _ = try await auth.completeSignIn(mfaToken: token, code: given)
        }
    }

    /// Keeps the anonymous account with `email`; an address another account has says what to do.
    static func keep(_ auth: PierAuth, email: String, password: String) async throws -> String {
        let failure: PierError
        do throws(PierError) {
            return try await auth.keepAccount(email: email, password: password)
        } catch {
            failure = error
        }
        guard failure.code == .identityTaken else { throw failure }
        throw CLIError.failed(
            "\(email) has an account already: `pier merge \(email)` signs in to it and brings this one along",
            code: CLIError.exitCode(failure))
    }
}
