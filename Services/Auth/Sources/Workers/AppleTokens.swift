import PierCrypto
import PierHTTP
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Sign in with Apple's tokens on the server, so that deleting an account revokes what Apple gave
/// (App Store Review Guideline 5.1.1(v)): the authorization code the app sends with its ID token
/// is exchanged at Apple's token endpoint for a refresh token, kept sealed beside the identity,
/// and revoked at Apple's revoke endpoint when the identity goes (``AppleRevocations``).
///
/// Both endpoints take a client secret: an ES256 JWT signed with the Sign in with Apple key
/// (header `kid`: the key id; `iss`: the team id; `sub`: the client id; `aud`:
/// `https://appleid.apple.com`; `iat` and `exp`, at most six months apart — five minutes here).
struct AppleTokens: Sendable {
    struct Settings: Sendable {
        let teamID: String
        let keyID: String
        /// The app's bundle id (or the web's service id) the codes are issued to.
        let clientID: String
        let key: P256PrivateKey
        /// `https://appleid.apple.com` (a loopback `http://` in tests).
        let baseURL: String
    }

    let settings: Settings
    let http: HTTPClient
    let box: SecretBox

    /// A fresh client secret.
    func clientSecret(now: Int = Int(Date().timeIntervalSince1970)) throws -> String {
        struct Claims: Encodable {
            let iss: String
            let iat: Int
            let exp: Int
            let aud: String
            let sub: String
        }
        let claims = Claims(
            iss: settings.teamID, iat: now, exp: now + 300, aud: "https://appleid.apple.com", sub: settings.clientID)
        return try JWS.sign(
            payload: Array(try JSONEncoder().encode(claims)), header: JWSHeader(alg: "ES256", kid: settings.keyID),
            key: settings.key)
    }

    enum Outcome: Sendable, Equatable {
        case done(String?)
        /// Apple refused for good (`invalid_grant`, `invalid_client`): retrying changes nothing.
        case refused(String)
        /// Unreachable, or a 5xx: worth another try.
        case unavailable(String)
    }

    /// Exchanges an authorization code (single use, five minutes) for a refresh token.
    func exchange(code: String) async -> Outcome {
        let outcome = await post(
            "/auth/token",
            [("grant_type", "authorization_code"), ("code", code), ("client_id", settings.clientID)])
        guard case .done(let body?) = outcome else { return outcome }
        struct Answer: Decodable { let refresh_token: String? }
        guard let token = try? JSONDecoder().decode(Answer.self, from: Data(body.utf8)).refresh_token, !token.isEmpty else {
            return .refused("the answer holds no refresh_token")
        }
        return .done(token)
    }

    /// Revokes a refresh token.
    func revoke(_ token: String) async -> Outcome {
        await post(
            "/auth/revoke",
            [("client_id", settings.clientID), ("token", token), ("token_type_hint", "refresh_token")])
    }

    private func post(_ path: String, _ fields: [(String, String)]) async -> Outcome {
        let secret: String
        do { secret = try clientSecret() } catch { return .refused("the client secret could not be signed: \(error)") }
        let body = Self.form(fields + [("client_secret", secret)])
        do {
            let response = try await http.send(
                "POST", settings.baseURL + path,
                headers: ["Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"],
                body: Array(body.utf8), timeout: .seconds(10), limit: 64 << 10)
            let text = String(decoding: response.body, as: UTF8.self)
            switch response.status {
            case 200..<300: return .done(text)
            case 500...: return .unavailable("HTTP \(response.status)")
            default:
                // Apple answers `{"error": "invalid_grant"}` and the like: the code alone, never
                // anything of the request.
                struct Refusal: Decodable { let error: String? }
                let error = (try? JSONDecoder().decode(Refusal.self, from: Data(response.body)).error) ?? nil
                return response.status == 429
                    ? .unavailable("HTTP 429") : .refused("HTTP \(response.status) \(error ?? "")")
            }
        } catch {
            return .unavailable("\(error)")
        }
    }

    // MARK: - At rest

    /// A refresh token sealed for storage, bound to the identity's subject.
    func seal(_ token: String, subject: String) throws -> [UInt8] {
        try box.seal(Array(token.utf8), context: Self.context(subject))
    }

    func open(_ sealed: [UInt8], subject: String) throws -> String {
        String(decoding: try box.open(sealed, context: Self.context(subject)), as: UTF8.self)
    }

    static func context(_ subject: String) -> [UInt8] { Array(("apple refresh token\u{0}" + subject).utf8) }

    /// `application/x-www-form-urlencoded`: every byte but the unreserved ones percent-encoded.
    static func form(_ fields: [(String, String)]) -> String {
        func encode(_ text: String) -> String {
            var out = ""
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                    UInt8(ascii: "~"):
                    out.unicodeScalars.append(Unicode.Scalar(byte))
                default:
                    let hex = Array("0123456789ABCDEF")
                    out += "%" + String(hex[Int(byte >> 4)]) + String(hex[Int(byte & 15)])
                }
            }
            return out
        }
        return fields.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&")
    }
}

/// Revokes the refresh tokens of Apple identities that went (queued by trigger in the
/// transaction that removed them: `auth.apple_revocations`): claimed before each attempt, its
/// next one pushed back (doubling from `retrySeconds`, an hour at most), marked after. An
/// unreachable Apple is retried, 8 attempts; a refusal for good stops. Nothing here ever blocks
/// the deletion that queued it. Without Sign in with Apple keys, the queue is kept for later.
final class AppleRevocations: LifecycleService {
    var lifecycleName: String { "apple revocations" }
    static let maximumAttempts = 8

    private let database: PostgresPool
    private let tokens: AppleTokens
    private let retrySeconds: Int
    private let pollSeconds: Int
    private let logger: Logger

    init(database: PostgresPool, tokens: AppleTokens, retrySeconds: Int, pollSeconds: Int, logger: Logger) {
        self.database = database
        self.tokens = tokens
        self.retrySeconds = retrySeconds
        self.pollSeconds = pollSeconds
        self.logger = logger
    }

    func run() async {
        await Periodic(lifecycleName, every: .seconds(pollSeconds)) { [self] in await revokeDue() }.run()
    }

    /// Revokes every token that is due; returns how many were revoked.
    @discardableResult
    func revokeDue() async -> Int {
        var revoked = 0
        while true {
            do {
                let queue = RevocationQueue(database)
                guard let due = try await queue.claimDue(retrySeconds: retrySeconds) else { return revoked }
                let (id, attempts) = (due.id, due.attempts)
                let outcome: AppleTokens.Outcome
                do {
                    outcome = await tokens.revoke(try tokens.open(due.sealedToken.bytes, subject: due.subject))
                } catch {
                    outcome = .refused("the sealed token cannot be opened (another PIER_AUTH_MFA_KEY_FILE?)")
                }
                switch outcome {
                case .done:
                    try await queue.revoked(id)
                    logger.info("apple token revoked", [("revocation_id", .int(Int(id)))])
                    revoked += 1
                case .refused(let reason), .unavailable(let reason):
                    let final = attempts >= Self.maximumAttempts || { if case .refused = outcome { true } else { false } }()
                    try await queue.failed(id, reason: reason, final: final)
                    logger.warning(
                        final ? "apple token revocation given up" : "apple token not revoked; will retry",
                        [("revocation_id", .int(Int(id))), ("attempt", .int(attempts)), ("error", .string(reason))])
                }
            } catch {
                logger.warning("apple revocations unavailable", [("error", .string("\(error)"))])
                return revoked
            }
        }
    }
}
