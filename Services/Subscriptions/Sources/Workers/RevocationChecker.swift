import PierCrypto
import PierHTTP
import PierRuntime
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// How App Store certificates are checked for revocation (`PIER_SUBSCRIPTIONS_APPSTORE_OCSP`).
public enum RevocationMode: String, Sendable, CaseIterable {
    case off, soft, hard
}

/// Apple's recommended production check of App Store signed data: the leaf and the intermediate
/// of a verified chain asked of their OCSP responders (the URL in each certificate's Authority
/// Information Access), answers cached until their `nextUpdate`.
///
/// A revoked certificate is always refused. What proves nothing — a responder that cannot be
/// reached, an answer that does not verify, `unknown`, a certificate naming no responder — is
/// refused in `hard` mode and only logged in `soft` mode.
final class RevocationChecker: Sendable {
    typealias Mode = RevocationMode

    /// Why a chain was refused; safe to show to the client.
    struct Failure: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    /// What one certificate's check came to.
    private enum Outcome: Sendable {
        case answered(OCSPAnswer)
        /// No proof either way, and why.
        case inconclusive(String)
    }

    private struct Entry: Sendable {
        var outcome: Outcome
        var until: Date
    }

    /// How long an answer without `nextUpdate` is relied on.
    static let undatedLifetime: TimeInterval = 300
    /// How long an inconclusive check stands before the responder is asked again: a responder
    /// that is down costs one timeout per certificate per period, not one per request.
    static let inconclusiveLifetime: TimeInterval = 30

    let mode: Mode
    private let roots: [Certificate]
    private let client: HTTPClient
    /// How long a responder has to answer.
    private let timeout: Duration
    private let logger: Logger
    private let clock: @Sendable () -> Date
    private struct State {
        var cache: [[UInt8]: Entry] = [:]
        /// Checks in flight, so that concurrent requests ask a responder once.
        var pending: [[UInt8]: Task<Entry, Never>] = [:]
    }
    private let state = Mutex(State())

    init(
        mode: Mode, roots: [Certificate], http: HTTPClient, timeout: Duration, logger: Logger,
        clock: @escaping @Sendable () -> Date = Date.init
    ) {
        self.mode = mode
        self.roots = roots
        self.client = http
        self.timeout = timeout
        self.logger = logger
        self.clock = clock
    }

    /// Checks a chain built by ``CertificateChainVerifier`` (leaf first, root last): every
    /// certificate but the root against its issuer.
    func check(_ chain: [Certificate]) async throws(Failure) {
        guard mode != .off else { return }
        for (index, certificate) in chain.dropLast().enumerated() {
            let name = index == 0 ? "leaf" : "intermediate"
            switch await outcome(of: certificate, issuedBy: chain[index + 1]) {
            case .answered(let answer):
                switch answer.status {
                case .good: continue
                case .revoked(let at, let reason):
                    throw Failure(
                        reason:
                            "the \(name) certificate was revoked at \(CivilDate.iso8601(secondsSince1970: at.timeIntervalSince1970, fractionDigits: 0))"
                            + (reason.map { " (\($0))" } ?? ""))
                case .unknown:
                    try inconclusive("its OCSP responder does not know the \(name) certificate", name)
                }
            case .inconclusive(let why):
                try inconclusive(why, name)
            }
        }
    }

    private func inconclusive(_ why: String, _ name: String) throws(Failure) {
        guard mode == .hard else { return }
        throw Failure(reason: "the revocation of the \(name) certificate could not be checked: \(why)")
    }

    private func outcome(of certificate: Certificate, issuedBy issuer: Certificate) async -> Outcome {
        let request: OCSPRequest
        do {
            request = try OCSPRequest(certificate: certificate, issuer: issuer)
        } catch {
            return .inconclusive("no OCSP request could be built for it")
        }
        let key = request.certificateID
        let now = clock()
        enum Next {
            case cached(Entry)
            case wait(Task<Entry, Never>)
        }
        let next = state.withLock { state -> Next in
            if let entry = state.cache[key], entry.until > now { return .cached(entry) }
            if let running = state.pending[key] { return .wait(running) }
            let task = Task { await self.ask(request, about: certificate) }
            state.pending[key] = task
            return .wait(task)
        }
        let task: Task<Entry, Never>
        switch next {
        case .cached(let entry): return entry.outcome
        case .wait(let running): task = running
        }
        let entry = await task.value
        state.withLock { state in
            if state.pending.removeValue(forKey: key) != nil { state.cache[key] = entry }
        }
        return entry.outcome
    }

    /// Asks the certificate's first responder (one is all Apple's certificates name).
    private func ask(_ request: OCSPRequest, about certificate: Certificate) async -> Entry {
        let now = clock()
        let outcome: Outcome
        if let url = certificate.ocspResponders.first {
            do {
                let response = try await client.send(
                    "POST", url, headers: ["Content-Type": "application/ocsp-request", "Accept": "application/ocsp-response"],
                    body: request.der, timeout: timeout, limit: 64 << 10)
                if response.status == 200 {
                    outcome = .answered(try request.answer(fromResponse: response.body, roots: roots))
                } else {
                    outcome = .inconclusive("its OCSP responder \(url) answered HTTP \(response.status)")
                }
            } catch let failure as OCSPRequest.Failure {
                outcome = .inconclusive("\(failure.reason) (\(url))")
            } catch {
                outcome = .inconclusive("its OCSP responder \(url) could not be reached")
            }
        } else {
            outcome = .inconclusive("the certificate names no OCSP responder")
        }
        switch outcome {
        case .answered(let answer):
            if case .revoked = answer.status {
                logger.warning("appstore certificate revoked", [("ocsp", .string(certificate.ocspResponders.first ?? ""))])
            }
            return Entry(outcome: outcome, until: answer.nextUpdate ?? now.addingTimeInterval(Self.undatedLifetime))
        case .inconclusive(let why):
            if mode == .soft { logger.warning("appstore revocation check inconclusive, accepted", [("reason", .string(why))]) }
            return Entry(outcome: outcome, until: now.addingTimeInterval(Self.inconclusiveLifetime))
        }
    }
}
