import PierCrypto
import PierHTTP

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The caller of a request, from a verified access token.
public struct Principal: Sendable, Equatable {
    public let userID: UUID
    public let role: String
    /// The session (refresh-token family) the token was issued for.
    public let sessionID: UUID?

    public var isAdmin: Bool { role == "admin" }
}

/// Verifies bearer tokens (ES256, keys from the auth service's JWKS or a key file) and exposes
/// the caller to handlers.
public struct Authenticator: Sendable {
    public let verifier: AccessTokenVerifier
    /// Tokens revoked before they expire (logouts, deleted accounts); nil where there is no
    /// database to learn them from (a gateway that only proxies: the services behind check).
    public let revocations: RevocationList?

    public init(verifier: AccessTokenVerifier, revocations: RevocationList? = nil) {
        self.verifier = verifier
        self.revocations = revocations
    }

    /// The same verifier, with `revocations` checked.
    public func checking(_ revocations: RevocationList?) -> Authenticator {
        Authenticator(verifier: verifier, revocations: revocations)
    }

    /// The caller, or 401 with a problem that says why in general terms.
    public func principal(_ request: Request) async throws(HTTPError) -> Principal {
        guard let token = request.bearerToken else { throw .unauthorized() }
        let claims: AccessClaims
        do {
            claims = try await verifier.verify(token)
        } catch .keysUnavailable {
            throw .unavailable(retryAfter: 2, "The token could not be checked right now.")
        } catch .expired {
            throw .unauthorized("The access token has expired; refresh it.")
        } catch {
            throw .unauthorized("The access token is not valid.")
        }
        switch revocations?.verdict(for: claims) ?? .valid {
        case .valid: break
        case .revoked: throw .unauthorized("The session has ended; sign in again.")
        case .unknown: throw .unavailable(retryAfter: 2, "Whether the token was revoked cannot be checked right now.")
        }
        guard let userID = UUID(uuidString: claims.sub) else { throw .unauthorized("The access token is not valid.") }
        return Principal(userID: userID, role: claims.role, sessionID: claims.sid.flatMap(UUID.init(uuidString:)))
    }

    /// The caller when a bearer token is present; nil for anonymous requests. A present but
    /// invalid token is still a 401, never silently anonymous.
    public func optionalPrincipal(_ request: Request) async throws(HTTPError) -> Principal? {
        guard request.headers["Authorization"] != nil else { return nil }
        return try await principal(request)
    }

    /// The caller, who must be an admin (403 otherwise).
    public func admin(_ request: Request) async throws(HTTPError) -> Principal {
        let principal = try await principal(request)
        guard principal.isAdmin else { throw .forbidden("This needs the admin role.") }
        return principal
    }
}
