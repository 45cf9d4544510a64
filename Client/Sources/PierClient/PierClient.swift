import Foundation
import PierModels

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The client an app holds for one Pier server:
///
/// ```swift
/// let pier = PierClient(baseURL: URL(string: "https://api.example.com")!, sessionStore: KeychainSessionStore())
/// let user = try await pier.auth.login(email: email, password: password)
/// let item = try await pier.feedback.send(NewFeedback(message: "Love it", rating: 5))
/// if await pier.subscriptions.isEntitled("pro") { … }
/// ```
///
/// Sessions refresh by themselves; calls that are safe to repeat are retried on transient
/// failures; every error is a ``PierError``.
public final class PierClient: Sendable {
    public struct Options: Sendable {
        public var retry: RetryPolicy
        /// Refresh the access token when it has less than this left.
        public var refreshMargin: TimeInterval
        /// A directory where feedback that could not be sent waits (``PierFeedback/flushOutbox()``);
        /// nil: no outbox, a failed send is the caller's to retry.
        public var feedbackOutbox: URL?
        /// Names this installation of the app to the server (`X-Installation-ID`): anonymous feedback
        /// ids and keys are kept apart per installation, so a retry from another network still
        /// finds its first attempt. nil: kept in the outbox directory when there is one, else new
        /// for each client.
        public var installationID: String?
        /// How old a cached subscription status may be and still be served when the server cannot
        /// be reached (marked ``CachedStatus/isStale``).
        public var staleStatusLimit: TimeInterval
        /// Trust only statuses signed by your server's pinned key (see ``StatusSigning``); nil:
        /// statuses are trusted as HTTPS delivers them.
        public var statusSigning: StatusSigning?
        /// The installation's App Attest (`DeviceCheckAttestation` on Apple platforms): anonymous
        /// feedback carries its word (`X-Installation-Token`, as a server with
        /// `PIER_FEEDBACK_APP_ATTEST` asks), and ``PierAuth/signInAnonymously(deviceName:attestation:)``
        /// uses it. nil: neither does.
        public var appAttestation: (any AppAttestation)?
        public var urlSession: URLSession

        /// Ephemeral, without URLSession's own cache: PierClient keeps what may be kept itself.
        public static var defaultSession: URLSession {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.urlCache = nil
            configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
            return URLSession(configuration: configuration)
        }

        public init(
            retry: RetryPolicy = RetryPolicy(), refreshMargin: TimeInterval = 60, feedbackOutbox: URL? = nil,
            installationID: String? = nil, staleStatusLimit: TimeInterval = 3 * 24 * 3600,
            statusSigning: StatusSigning? = nil, appAttestation: (any AppAttestation)? = nil,
            urlSession: URLSession = PierClient.Options.defaultSession
        ) {
            self.statusSigning = statusSigning
            self.appAttestation = appAttestation
            self.retry = retry
            self.installationID = installationID
            self.refreshMargin = refreshMargin
            self.feedbackOutbox = feedbackOutbox
            self.staleStatusLimit = staleStatusLimit
            self.urlSession = urlSession
        }
    }

    public let baseURL: URL
    public let auth: PierAuth
    public let feedback: PierFeedback
    public let subscriptions: PierSubscriptions
    /// The team's calls (admins only).
    public let admin: PierAdmin
    let authorized: Authorized

    public init(baseURL: URL, sessionStore: (any SessionStore)? = nil, options: Options = Options()) {
        self.baseURL = baseURL
        let transport = Transport(baseURL: baseURL, session: options.urlSession, retry: options.retry)
        let sessions = SessionManager(
            store: sessionStore ?? MemorySessionStore(), transport: transport, margin: options.refreshMargin)
        let authorized = Authorized(transport: transport, sessions: sessions)
        self.authorized = authorized
        let installationID =
            options.installationID ?? options.feedbackOutbox.map(PierFeedback.installationID(in:))
            ?? UUID().uuidString.lowercased()
        let attestations = options.appAttestation.map(InstallationTokens.init)
        auth = PierAuth(authorized, installationID: installationID, attestations: attestations)
        feedback = PierFeedback(
            authorized, outbox: options.feedbackOutbox, installationID: installationID, attestations: attestations)
        subscriptions = PierSubscriptions(
            authorized, staleLimit: options.staleStatusLimit, signing: options.statusSigning, installationID: installationID)
        admin = PierAdmin(authorized)
    }
}

extension PierClient {
    /// Calls any endpoint, as the signed-in user or (`signedIn: false`) anonymously, with the
    /// same refresh, retries (GET, PUT, DELETE only) and errors as the typed calls; returns the
    /// answer's body. For tools and for endpoints this library has no method for (the team's).
    public func call(
        _ method: String, _ path: String, query: [URLQueryItem] = [], json body: Data? = nil, signedIn: Bool = true
    ) async throws(PierError) -> Data {
        let call = Call(
            method: method, path: path, query: query, body: body, retryable: ["GET", "HEAD", "PUT", "DELETE"].contains(method))
        return try await authorized.send(call, signedIn: signedIn).0
    }
}

/// What a conditional GET brought: the answer, or nil when the server said it had not changed
/// (304) since the `ETag` given; and the answer's `ETag`.
public struct Fetched<Answer: Sendable>: Sendable {
    public let answer: Answer?
    public let etag: String?
}

extension PierClient {
    /// The installation's id (`X-Installation-ID`), as ``Options/installationID`` set it or
    /// as it was made and kept.
    public var installationID: String { feedback.installationID }

    /// Calls an endpoint of a plugin (its `Endpoint` value, which its package shares with apps)
    /// with the same sessions, retries and errors as Pier's own calls: as the signed-in user
    /// when there is one, anonymously otherwise.
    public func call<Parameters, Body: Encodable, Answer: Decodable>(
        _ endpoint: Endpoint<Parameters, Body, Answer>, _ parameters: Parameters, body: Body, headers: [String: String] = [:]
    ) async throws(PierError) -> Answer {
        try await authorized.call(endpoint, parameters, body: body, headers: headers, signedIn: auth.currentUser != nil)
    }

    /// Calls an endpoint of a plugin that takes no body (a GET, a POST that names what it acts
    /// on in its path), as ``call(_:_:body:headers:)`` does.
    public func call<Parameters, Answer: Decodable>(
        _ endpoint: Endpoint<Parameters, NoBody, Answer>, _ parameters: Parameters
    ) async throws(PierError) -> Answer {
        try await authorized.call(endpoint, parameters, signedIn: auth.currentUser != nil)
    }

    /// Calls an endpoint of a plugin that answers no content (204), with `body`.
    public func call<Parameters, Body: Encodable>(
        _ endpoint: Endpoint<Parameters, Body, NoContent>, _ parameters: Parameters, body: Body
    ) async throws(PierError) {
        try await authorized.perform(endpoint, parameters, body: body, signedIn: auth.currentUser != nil)
    }

    /// Calls an endpoint of a plugin that takes no body and answers no content (a DELETE).
    public func call<Parameters>(_ endpoint: Endpoint<Parameters, NoBody, NoContent>, _ parameters: Parameters)
        async throws(PierError)
    {
        try await authorized.perform(endpoint, parameters, signedIn: auth.currentUser != nil)
    }

    /// A GET of a plugin's endpoint, conditional on `etag` (`If-None-Match`): nil answer when
    /// unchanged. As the signed-in user when there is one, anonymously otherwise.
    public func fetch<Parameters, Answer: Decodable & Sendable>(
        _ endpoint: Endpoint<Parameters, NoBody, Answer>, _ parameters: Parameters, headers: [String: String] = [:],
        ifNoneMatch etag: String? = nil
    ) async throws(PierError) -> Fetched<Answer> {
        var sent = headers
        if let etag { sent["If-None-Match"] = etag }
        let (data, response) = try await authorized.send(
            Call(endpoint, parameters, headers: sent), signedIn: auth.currentUser != nil)
        let tag = response.value(forHTTPHeaderField: "ETag")
        guard response.statusCode != 304 else { return Fetched(answer: nil, etag: tag ?? etag) }
        let answer = try Transport.decode(Answer.self, data, requestID: response.value(forHTTPHeaderField: "X-Request-ID"))
        return Fetched(answer: answer, etag: tag)
    }
}

extension PierClient {
    /// A plugin's live stream of the signed-in user (server-sent events named `event`, each the
    /// JSON of `State`), as Pier's own are followed: reconnected with `Last-Event-ID`, a fresh
    /// token when one expires; it ends at sign-out, and when the reading task is cancelled.
    public func live<Parameters, State: Decodable & Sendable>(
        _ endpoint: Endpoint<Parameters, NoBody, EventStreamAnswer>, _ parameters: Parameters, event: String,
        as type: State.Type
    ) -> AsyncStream<State> {
        authorized.live(endpoint.path(parameters), event: event, as: State.self) { state, _ in state }
    }
}

/// Sends calls as the signed-in user: a fresh access token, and one retry after a 401 with a
/// refreshed one.
struct Authorized: Sendable {
    let transport: Transport
    let sessions: SessionManager

    func send(_ call: Call, signedIn: Bool = true) async throws(PierError) -> (Data, HTTPURLResponse) {
        guard signedIn else { return try await transport.send(call, token: nil) }
        let token = try await sessions.accessToken()
        do {
            return try await transport.send(call, token: token)
        } catch  where error.status == 401 && [ProblemCode.tokenExpired, .tokenInvalid].contains(error.code) {
            return try await transport.send(call, token: try await sessions.accessToken(rejected: token))
        } catch  where error.status == 401 && [ProblemCode.sessionRevoked, .accountDeleted].contains(error.code) {
            await sessions.signOut(error.code == .accountDeleted ? .accountDeleted : .sessionEnded)
            throw error
        }
    }

    func json<T: Decodable>(_ type: T.Type, _ call: Call, signedIn: Bool = true) async throws(PierError) -> T {
        let (data, response) = try await send(call, signedIn: signedIn)
        return try Transport.decode(T.self, data, requestID: response.value(forHTTPHeaderField: "X-Request-ID"))
    }

    /// Calls `endpoint` with `body` and decodes its answer.
    func call<Parameters, Body: Encodable, Answer: Decodable>(
        _ endpoint: Endpoint<Parameters, Body, Answer>, _ parameters: Parameters, body: Body,
        headers: [String: String] = [:], signedIn: Bool = true
    ) async throws(PierError) -> Answer {
        try await json(
            Answer.self, Call(endpoint, parameters, body: Transport.body(sent: body), headers: headers), signedIn: signedIn)
    }

    /// Calls `endpoint`, which takes no body, and decodes its answer.
    func call<Parameters, Answer: Decodable>(
        _ endpoint: Endpoint<Parameters, NoBody, Answer>, _ parameters: Parameters, signedIn: Bool = true
    ) async throws(PierError) -> Answer {
        try await json(Answer.self, Call(endpoint, parameters), signedIn: signedIn)
    }

    /// Calls `endpoint`, which answers no content, with `body`.
    func perform<Parameters, Body: Encodable>(
        _ endpoint: Endpoint<Parameters, Body, NoContent>, _ parameters: Parameters, body: Body, signedIn: Bool = true
    ) async throws(PierError) {
        _ = try await send(Call(endpoint, parameters, body: Transport.body(sent: body)), signedIn: signedIn)
    }

    /// Calls `endpoint`, which takes no body and answers no content.
    func perform<Parameters>(
        _ endpoint: Endpoint<Parameters, NoBody, NoContent>, _ parameters: Parameters, signedIn: Bool = true
    ) async throws(PierError) {
        _ = try await send(Call(endpoint, parameters), signedIn: signedIn)
    }

    /// The answer of `endpoint` as it came, not decoded (a file to save).
    func bytes<Parameters, Answer>(
        _ endpoint: Endpoint<Parameters, NoBody, Answer>, _ parameters: Parameters
    ) async throws(PierError) -> Data {
        try await send(Call(endpoint, parameters)).0
    }
}
