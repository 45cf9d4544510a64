import Foundation
import PierModels

/// Every error PierClient throws: a problem the server answered with, or a failure to reach it.
///
/// Switch on ``code`` (stable; see `ProblemCode`) rather than ``detail`` (for people, may be
/// reworded). ``isTransient`` says whether trying again later can help.
public struct PierError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The server answered with a problem: ``status`` and ``code`` say which.
        case server
        /// The server could not be reached, or the connection broke (offline, timeout, DNS).
        case network
        /// The server's answer could not be read (not the JSON this version expects).
        case decoding
        /// The call needs a signed-in user and there is none.
        case signedOut
        /// The device could not do what was asked of it (App Attest unavailable or failing).
        case device
        /// A status that had to be signed by a pinned key (``StatusSigning``) was not: changed
        /// on the way, replayed, or edited where it was kept.
        case untrusted
    }

    public let kind: Kind
    /// The HTTP status, for ``Kind/server``.
    public let status: Int?
    /// The problem's stable code, for ``Kind/server``.
    public let code: ProblemCode?
    /// What happened, for a developer to read.
    public let detail: String
    /// The invalid fields of a 422, each with why.
    public let fieldErrors: [Problem.FieldError]
    /// The request's id (`X-Request-ID`): quote it when reporting a problem.
    public let requestId: String?
    /// How long the server asked to wait before trying again (`Retry-After`), if it did.
    public let retryAfter: TimeInterval?
    /// True when a feedback that could not be sent now was kept in the outbox, to be sent by
    /// ``PierFeedback/flushOutbox()``: after any transient failure, an outage (``isOffline``)
    /// or a limit (429, with ``retryAfter``) or a server error. Tell the user which.
    public internal(set) var queuedForRetry = false
    /// `mfa_required` (a sign-in of an account with a second factor): pass it with the user's
    /// code to ``PierAuth/completeSignIn(mfaToken:code:)``.
    public internal(set) var mfaToken: String?
    /// `mfa_required`: what may finish the sign-in (`totp`, `recovery_code`, and `passkey` when
    /// one of the account's passkeys may: ``PierAuth/completeSignIn(mfaToken:passkey:)``).
    public internal(set) var factors: [String] = []
    /// `identity_taken` (keeping an anonymous account with an address or identity another
    /// account has): what the app may propose (`sign_in`: to that account instead; `merge`: sign
    /// in to it and bring the anonymous account along, ``PierAuth/merge(into:)``).
    public internal(set) var offer: [String] = []

    init(
        kind: Kind, status: Int? = nil, code: ProblemCode? = nil, detail: String, fieldErrors: [Problem.FieldError] = [],
        requestId: String? = nil, retryAfter: TimeInterval? = nil
    ) {
        self.kind = kind
        self.status = status
        self.code = code
        self.detail = detail
        self.fieldErrors = fieldErrors
        self.requestId = requestId
        self.retryAfter = retryAfter
    }

    static func signedOut(_ detail: String = "Sign in first.") -> PierError { PierError(kind: .signedOut, detail: detail) }

    /// True when the server could not be reached at all (no network, DNS, timeout, a broken
    /// connection): what an app may call "offline". A 429 or a 5xx is the server answering.
    public var isOffline: Bool { kind == .network }

    /// True when the same call may succeed later: the network, 408, 429 and 5xx but 501.
    public var isTransient: Bool {
        switch kind {
        case .network: true
        case .server: status.map { $0 == 408 || $0 == 429 || ($0 >= 500 && $0 != 501) } ?? false
        case .decoding, .signedOut, .untrusted, .device: false
        }
    }

    public var description: String {
        var text = "Pier: \(detail)"
        if let status { text += " (\(status)\(code.map { " \($0)" } ?? ""))" }
        if let requestId { text += " [request \(requestId)]" }
        return text
    }
}
