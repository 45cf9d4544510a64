import Foundation
import PierCrypto
import PierRuntime
import PierService
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import SubscriptionsService

/// Revocation checks of App Store chains against real OCSP responders: `openssl ocsp` serving a
/// test CA's index on a local port, one responder per issuing CA as Apple runs them (the leaf's
/// is the intermediate's, the intermediate's the root's). Every answer a responder can give, and
/// none at all, in each mode.
@Suite struct RevocationTests {
    /// A CA whose leaf and intermediate name local responders, with the ports kept for them.
    struct Setup {
        let ca: TestCA
        let leafPort: Int
        let intermediatePort: Int

        init() throws {
            let ports = try OCSPResponder.freePorts(2)
            (leafPort, intermediatePort) = (ports[0], ports[1])
            ca = try TestCA(
                .init(
                    leafOCSP: "http://127.0.0.1:\(leafPort)/ocsp", intermediateOCSP: "http://127.0.0.1:\(intermediatePort)/ocsp"))
        }

        /// Starts both responders: the leaf's answers as `leaf` says, the intermediate's as `intermediate` says.
        func responders(
            leaf: OCSPResponder.Entry? = .valid, intermediate: OCSPResponder.Entry? = .valid, leafSigner: TestCA.Issued? = nil,
            nextUpdateMinutes: Int? = 60, requests: Int? = nil
        ) async throws -> [OCSPResponder] {
            let leafResponder = try OCSPResponder(
                port: leafPort, issuer: ca.intermediate, signer: leafSigner, entries: leaf.map { [(ca.leaf, $0)] } ?? [],
                nextUpdateMinutes: nextUpdateMinutes, requests: requests)
            do {
                let started = [
                    leafResponder,
                    try OCSPResponder(
                        port: intermediatePort, issuer: ca.root, entries: intermediate.map { [(ca.intermediate, $0)] } ?? [],
                        nextUpdateMinutes: nextUpdateMinutes, requests: requests),
                ]
                for responder in started { try await responder.listening() }
                return started
            } catch {
                leafResponder.stop()
                throw error
            }
        }

        func verifier(_ mode: RevocationMode, clock: @escaping @Sendable () -> Date = Date.init) throws -> AppStoreVerifier {
            var configuration = try SubscriptionsConfiguration(
                environment: Environment([
                    "PIER_SUBSCRIPTIONS_APPSTORE_BUNDLE_ID": SubscriptionsHarness.bundleID,
                    "PIER_SUBSCRIPTIONS_APPSTORE_OCSP": mode.rawValue,
                    "PIER_SUBSCRIPTIONS_APPSTORE_OCSP_TIMEOUT_S": "2",
                ]), production: false)
            configuration.roots = [ca.root.certificate]
            return AppStoreVerifier(
                configuration: configuration, http: TestHTTP.client, logger: Logger(service: "subscriptions", level: .error),
                clock: clock)
        }

        /// The refusal of a fresh transaction signed by this CA, or nil when it verified.
        func refusal(_ verifier: AppStoreVerifier) async throws -> String? {
            let jws = try ca.sign(
                AppStorePayload.transaction(
                    id: "3000000001", original: "3000000000", purchased: Date(), expires: Date().addingTimeInterval(3600)))
            do {
                _ = try await verifier.transaction(jws)
                return nil
            } catch {
                return error.reason
            }
        }
    }

    @Test func goodAnswersForLeafAndIntermediateAreAccepted() async throws {
        let setup = try Setup()
        let responders = try await setup.responders()
        defer { responders.forEach { $0.stop() } }
        #expect(try await setup.refusal(try setup.verifier(.hard)) == nil)
        #expect(try await setup.refusal(try setup.verifier(.soft)) == nil)
    }

    @Test func aRevokedLeafOrIntermediateIsRefusedInEveryMode() async throws {
        let setup = try Setup()
        var responders = try await setup.responders(leaf: .revoked("keyCompromise"))
        for mode in [RevocationMode.soft, .hard] {
            let reason = try await setup.refusal(try setup.verifier(mode))
            #expect(reason?.contains("leaf certificate was revoked") == true, "\(mode): \(reason ?? "accepted")")
            #expect(reason?.contains("keyCompromise") == true)
        }
        // Off: Apple's offline mode, nothing asked.
        #expect(try await setup.refusal(try setup.verifier(.off)) == nil)
        responders.forEach { $0.stop() }

        responders = try await setup.responders(intermediate: .revoked("cACompromise"))
        defer { responders.forEach { $0.stop() } }
        let reason = try await setup.refusal(try setup.verifier(.soft))
        #expect(reason?.contains("intermediate certificate was revoked") == true, "\(reason ?? "accepted")")
    }

    /// `unknown`, an unreachable responder and an answer signed by someone else prove nothing:
    /// refused in hard mode (saying why), accepted in soft mode.
    @Test func whatProvesNothingIsRefusedOnlyInHardMode() async throws {
        let setup = try Setup()
        var responders = try await setup.responders(leaf: nil)
        #expect(try await setup.refusal(try setup.verifier(.hard))?.contains("does not know the leaf") == true)
        #expect(try await setup.refusal(try setup.verifier(.soft)) == nil)
        responders.forEach { $0.stop() }

        // Signed by another CA's intermediate: a forged "good".
        let other = try TestCA()
        responders = try await setup.responders(leafSigner: other.intermediate)
        let forged = try await setup.refusal(try setup.verifier(.hard))
        #expect(forged?.contains("signature does not verify") == true, "\(forged ?? "accepted")")
        #expect(try await setup.refusal(try setup.verifier(.soft)) == nil)
        responders.forEach { $0.stop() }

        // Nobody listening.
        let unreachable = try await setup.refusal(try setup.verifier(.hard))
        #expect(unreachable?.contains("could not be reached") == true, "\(unreachable ?? "accepted")")
        #expect(try await setup.refusal(try setup.verifier(.soft)) == nil)

        // A chain whose certificates name no responder (the default test CA).
        let silent = try TestCA()
        var configuration = try SubscriptionsConfiguration(
            environment: Environment([
                "PIER_SUBSCRIPTIONS_APPSTORE_BUNDLE_ID": SubscriptionsHarness.bundleID,
                "PIER_SUBSCRIPTIONS_APPSTORE_OCSP": "hard",
            ]), production: false)
        configuration.roots = [silent.root.certificate]
        let verifier = AppStoreVerifier(
            configuration: configuration, http: TestHTTP.client, logger: Logger(service: "subscriptions", level: .error))
        let jws = try silent.sign(
            AppStorePayload.transaction(id: "1", original: "1", purchased: Date(), expires: Date().addingTimeInterval(60)))
        await #expect(throws: AppStoreVerifier.Failure.self) { try await verifier.transaction(jws) }
    }

    /// An answer is relied on until its nextUpdate, and asked again after it.
    @Test func answersAreCachedUntilTheirNextUpdate() async throws {
        let setup = try Setup()
        let offset = Locked<TimeInterval>(0)
        let verifier = try setup.verifier(.hard) { Date().addingTimeInterval(offset.withLock { $0 }) }
        let responders = try await setup.responders(nextUpdateMinutes: 10)
        #expect(try await setup.refusal(verifier) == nil)
        responders.forEach { $0.stop() }
        // The responders are gone: the cached answers still hold…
        offset.withLock { $0 = 9 * 60 }
        #expect(try await setup.refusal(verifier) == nil)
        // …until their nextUpdate has passed.
        offset.withLock { $0 = 11 * 60 }
        #expect(try await setup.refusal(verifier)?.contains("could not be reached") == true)
    }

    /// Concurrent verifications of one chain ask each responder once: responders that answer
    /// one request and exit leave every one of them verified in hard mode.
    @Test func concurrentChecksAskOnce() async throws {
        let setup = try Setup()
        let responders = try await setup.responders(requests: 1)
        defer { responders.forEach { $0.stop() } }
        let verifier = try setup.verifier(.hard)
        let refusals = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<20 { group.addTask { try await setup.refusal(verifier) } }
            return try await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(refusals.allSatisfy { $0 == nil }, "\(refusals.compactMap { $0 })")
    }

    /// Through the service: Apple's online mode also checks the chain now, and a revoked leaf
    /// turns a purchase into a 422 that says so.
    @Test func theServiceRefusesARevokedChain() async throws {
        let setup = try Setup()
        let responders = try await setup.responders(leaf: .revoked("keyCompromise"))
        defer { responders.forEach { $0.stop() } }
        let service = try await SubscriptionsHarness.start(
            database: "pier_test_subscriptions_ocsp", ca: setup.ca, settings: ["PIER_SUBSCRIPTIONS_APPSTORE_OCSP": "hard"])
        let user = UUID()
        let jws = try setup.ca.sign(
            AppStorePayload.transaction(
                id: "3000000001", original: "3000000000", purchased: Date(), expires: Date().addingTimeInterval(3600),
                user: user))
        let reply = try await service.postTransaction(jws, user: user)
        await service.stop()
        #expect(reply.status == 422)
        #expect(reply.text.contains("leaf certificate was revoked"))
    }
}

/// `openssl ocsp` answering for one CA from an index file, as a CA's responder does.
final class OCSPResponder: @unchecked Sendable {
    enum Entry {
        case valid
        /// Revoked an hour ago, for this CRL reason.
        case revoked(String)
    }

    let port: Int
    private let process: Process
    private let directory: URL
    /// Where its standard error goes.
    private let log: URL

    /// Distinct ports for responders to listen on.
    static func freePorts(_ count: Int) throws -> [Int] {
        try (0..<count).map { _ in try PortHolder.unusedPort() }
    }

    /// - Parameters:
    ///   - issuer: the CA the answers are about (and, unless `signer` is given, that signs them).
    ///   - entries: the certificates the responder knows; any other is `unknown`.
    ///   - nextUpdateMinutes: the answers' nextUpdate, from now; nil for none.
    ///   - requests: how many requests to answer before exiting; nil for no limit.
    init(
        port: Int, issuer: TestCA.Issued, signer: TestCA.Issued? = nil, entries: [(TestCA.Issued, Entry)],
        nextUpdateMinutes: Int?, requests: Int? = nil
    ) throws {
        self.port = port
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("pier-ocsp-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyMMddHHmmss'Z'"
        let expiry = formatter.string(from: Date().addingTimeInterval(86_400 * 365))
        let index = entries.map { issued, entry in
            switch entry {
            case .valid: return "V\t\(expiry)\t\t\(issued.serialHex)\tunknown\t/CN=test\n"
            case .revoked(let reason):
                let at = formatter.string(from: Date().addingTimeInterval(-3600))
                return "R\t\(expiry)\t\(at),\(reason)\t\(issued.serialHex)\tunknown\t/CN=test\n"
            }
        }.joined()
        let signer = signer ?? issuer
        let files = [
            "index.txt": index, "ca.pem": issuer.pem, "signer.pem": signer.pem,
            "signer.key": try TestCA.privatePEM(signer.key),
        ]
        for (name, text) in files {
            try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        // Its stderr says when it listens (a bare connection to find out would make OpenSSL 3.0's
        // responder spin).
        let log = directory.appendingPathComponent("responder.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.currentDirectoryURL = directory
        process.arguments =
            [
                "ocsp", "-index", "index.txt", "-port", String(port), "-CA", "ca.pem", "-rsigner", "signer.pem", "-rkey",
                "signer.key", "-ignore_err",
            ] + (nextUpdateMinutes.map { ["-nmin", String($0)] } ?? []) + (requests.map { ["-nrequest", String($0)] } ?? [])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: log)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        self.log = log
    }

    /// Waits until the responder listens (its log says so), without holding a thread.
    func listening() async throws {
        let deadline = Date().addingTimeInterval(30)
        while !((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("waiting for OCSP client connections") {
            guard process.isRunning, Date() < deadline else {
                let said = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                stop()
                throw TestCAError("openssl ocsp did not start listening on \(port): \(said)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    deinit { stop() }

    func stop() {
        if process.isRunning {
            // SIGKILL: the responder does not always act on SIGTERM.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}
