import Foundation
import PierCrypto
import PierRuntime
import PierService
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import SubscriptionsService

/// App Store signed data is checked the way Apple's own library checks it; every way it can be
/// wrong is refused with a reason that says which check failed.
@Suite struct AppStoreVerifierTests {
    static let ca = try! TestCA()

    func verifier(
        roots: [Certificate] = [ca.root.certificate], sandbox: Bool = true, production: Bool = false,
        revocation: RevocationMode = .soft
    ) throws -> AppStoreVerifier {
        var configuration = try SubscriptionsConfiguration(
            environment: Environment([
                "PIER_SUBSCRIPTIONS_APPSTORE_BUNDLE_ID": SubscriptionsHarness.bundleID,
                "PIER_SUBSCRIPTIONS_APPSTORE_APP_APPLE_ID": String(SubscriptionsHarness.appAppleID),
                "PIER_SUBSCRIPTIONS_APPSTORE_SANDBOX": String(sandbox),
            ]), production: production)
        configuration.roots = roots
        configuration.revocation = revocation
        return AppStoreVerifier(
            configuration: configuration, http: TestHTTP.client, logger: Logger(service: "subscriptions", level: .error))
    }

    func payload(signed: Date = Date(), environment: String = "Sandbox", bundle: String = SubscriptionsHarness.bundleID)
        -> [String: Any]
    {
        AppStorePayload.transaction(
            id: "2000000001", original: "2000000000", purchased: Date(), expires: Date().addingTimeInterval(3600),
            signed: signed, environment: environment, bundle: bundle)
    }

    /// The reason a transaction was refused (nil when it verified).
    func refusal(_ jws: String, _ verifier: AppStoreVerifier? = nil) async throws -> String? {
        let verifier = try verifier ?? self.verifier()
        do {
            _ = try await verifier.transaction(jws)
            return nil
        } catch {
            return error.reason
        }
    }

    @Test func aValidTransactionVerifiesAndDecodes() async throws {
        let verified = try await verifier().transaction(try Self.ca.sign(payload()))
        #expect(verified.value.transactionId == "2000000001")
        #expect(verified.value.originalTransactionId == "2000000000")
        #expect(verified.value.productId == "pier.pro.monthly")
        #expect(verified.environment == "sandbox")
        #expect(verified.payload.objectValue?["storefront"] == .string("USA"))
    }

    /// As Apple's libraries build the chain: leaf → x5c[1] → a configured root; what x5c[2]
    /// holds is not read (Apple's test files carry the root there in another encoding), but
    /// three entries are still required. A payload without signedDate is checked at receipt.
    @Test func theChainIsBuiltAsAppleBuildsIt() async throws {
        let verifier = try verifier()
        let other = try TestCA()
        for third in [other.x5c[2], Self.ca.x5c[0], "bm90IGEgY2VydGlmaWNhdGU="] {
            let jws = try Self.ca.sign(payload(), x5c: [Self.ca.x5c[0], Self.ca.x5c[1], third])
            await #expect(throws: Never.self) { try await verifier.transaction(jws) }
        }
        #expect(
            try await refusal(try Self.ca.sign(payload(), x5c: [Self.ca.x5c[0], Self.ca.x5c[1]]))?.contains("exactly 3") == true)
        var unsigned = payload()
        unsigned["signedDate"] = nil
        let received = try await verifier.transaction(try Self.ca.sign(unsigned))
        #expect(abs(received.signedAt.timeIntervalSinceNow) < 60)
    }

    @Test func aChainFromAnotherRootIsRefused() async throws {
        let other = try TestCA()
        // The other CA's chain: built from the leaf through its intermediate to the configured
        // roots, it does not validate (x5c[2] is not read, as Apple's libraries do not read it).
        let foreign = try await refusal(try other.sign(payload()))
        #expect(
            foreign?.contains("does not validate") == true || foreign?.contains("trusted root") == true,
            "\(foreign ?? "accepted")")
        // The trusted root presented, but the intermediate and leaf from elsewhere: the chain breaks.
        let mixed = [other.x5c[0], other.x5c[1], Self.ca.x5c[2]]
        #expect(try await refusal(try other.sign(payload(), x5c: mixed))?.contains("does not validate") == true)
    }

    @Test func bothAppleMarkersAreRequired() async throws {
        let noIntermediateMarker = try TestCA(.init(intermediateOID: false))
        let reason = try await refusal(
            try noIntermediateMarker.sign(payload()), try verifier(roots: [noIntermediateMarker.root.certificate]))
        #expect(reason?.contains("1.2.840.113635.100.6.2.1") == true)

        let noLeafMarker = try TestCA(.init(leafOID: false))
        let leafReason = try await refusal(try noLeafMarker.sign(payload()), try verifier(roots: [noLeafMarker.root.certificate]))
        #expect(leafReason?.contains("1.2.840.113635.100.6.11.1") == true)
    }

    /// Apple's offline mode checks the chain as of signedDate; its online mode (revocation
    /// checks on) as of now too.
    @Test func theChainIsCheckedAtSignedDateAndOnlineNow() async throws {
        let day: TimeInterval = 86_400
        // A leaf that expired last week signed a transaction while it was valid: accepted offline.
        let retired = try TestCA(.init(leafValidity: (Date().addingTimeInterval(-30 * day), Date().addingTimeInterval(-7 * day))))
        let retiredVerifier = try verifier(roots: [retired.root.certificate], revocation: .off)
        let old = try retired.sign(payload(signed: Date().addingTimeInterval(-10 * day)))
        #expect(try await refusal(old, retiredVerifier) == nil)
        let online = try await refusal(old, try verifier(roots: [retired.root.certificate], revocation: .soft))
        #expect(online?.contains("as of now") == true && online?.contains("expired") == true, "\(online ?? "accepted")")
        // Signed after the leaf expired, or before it was valid: refused.
        #expect(try await refusal(try retired.sign(payload(signed: Date())), retiredVerifier)?.contains("expired") == true)
        #expect(
            try await refusal(try retired.sign(payload(signed: Date().addingTimeInterval(-60 * day))), retiredVerifier)?
                .contains("not yet valid") == true)
    }

    @Test func x5cMustHoldExactlyThreeCertificates() async throws {
        let x5c = Self.ca.x5c
        #expect(try await refusal(try Self.ca.sign(payload(), x5c: Array(x5c.prefix(2))))?.contains("exactly 3") == true)
        #expect(try await refusal(try Self.ca.sign(payload(), x5c: x5c + [x5c[2]]))?.contains("exactly 3") == true)
        #expect(
            try await refusal(try Self.ca.sign(payload(), x5c: [x5c[0], "not base64!", x5c[2]]))?.contains("certificate 1")
                == true)
    }

    @Test func onlyES256IsAccepted() async throws {
        for alg in ["RS256", "HS256", "none", "ES384"] {
            #expect(try await refusal(try Self.ca.sign(payload(), alg: alg))?.contains("algorithm \(alg)") == true)
        }
    }

    @Test func aBadSignatureOrATamperedPayloadIsRefused() async throws {
        let jws = try Self.ca.sign(payload())
        let parts = jws.split(separator: ".").map(String.init)
        var signature = Base64.urlDecoded(parts[2])!
        signature[10] ^= 0x01
        #expect(try await refusal(parts[0] + "." + parts[1] + "." + Base64.urlEncoded(signature))?.contains("signature") == true)

        // Someone extends their own subscription by editing the payload.
        var tampered = payload()
        tampered["expiresDate"] = AppStorePayload.ms(Date().addingTimeInterval(86_400 * 3650))
        let forged = parts[0] + "." + Base64.urlEncoded(try JSONSerialization.data(withJSONObject: tampered)) + "." + parts[2]
        #expect(try await refusal(forged)?.contains("signature") == true)
        // A signature by a key that is not the leaf's.
        let stranger = try P256PrivateKey.generate()
        let wrongKey = try JWS.sign(
            payload: Array(try JSONSerialization.data(withJSONObject: payload())), header: JWSHeader(x5c: Self.ca.x5c),
            key: stranger)
        #expect(try await refusal(wrongKey)?.contains("signature") == true)
    }

    @Test func anotherAppsTransactionIsRefused() async throws {
        #expect(try await refusal(try Self.ca.sign(payload(bundle: "com.example.other")))?.contains("bundle id") == true)
    }

    @Test func sandboxIsRefusedWhereNotAccepted() async throws {
        let production = try verifier(sandbox: false, production: true)
        #expect(try await refusal(try Self.ca.sign(payload()), production)?.contains("sandbox") == true)
        #expect(try await refusal(try Self.ca.sign(payload(environment: "Production")), production) == nil)
        #expect(try await refusal(try Self.ca.sign(payload(environment: "Xcode")))?.contains("Xcode") == true)
    }

    @Test func malformedTokensAreRefusedWithAReason() async throws {
        for token in ["", "a.b", "not.a.jws", String(repeating: "a", count: 70_000)] {
            #expect(try await refusal(token) != nil)
        }
        // A payload that verifies but lacks a field Pier needs.
        var missing = payload()
        missing["productId"] = nil
        #expect(try await refusal(try Self.ca.sign(missing))?.contains("productId is required") == true)
    }

    @Test func notificationsAreVerifiedWithTheirEmbeddedData() async throws {
        let transaction = try Self.ca.sign(payload())
        let renewal = try Self.ca.sign(AppStorePayload.renewal(original: "2000000000"))
        let body = AppStorePayload.notification("DID_RENEW", transaction: transaction, renewal: renewal)
        let verified = try await verifier().notification(try Self.ca.sign(body))
        #expect(verified.notification.value.notificationType == "DID_RENEW")
        #expect(verified.transaction?.value.transactionId == "2000000001")
        #expect(verified.renewal?.value.autoRenewStatus.value == 1)

        func refusal(_ body: [String: Any], _ verifier: AppStoreVerifier) async throws -> String? {
            let jws = try Self.ca.sign(body)
            do {
                _ = try await verifier.notification(jws)
                return nil
            } catch {
                return error.reason
            }
        }
        let production = try self.verifier(sandbox: false, production: true)
        let otherApp = AppStorePayload.notification(
            "DID_RENEW", transaction: nil, renewal: nil, environment: "Production", appAppleID: 42)
        #expect(try await refusal(otherApp, production)?.contains("app Apple ID") == true)
        let otherBundle = AppStorePayload.notification("TEST", transaction: nil, renewal: nil, bundle: "com.example.other")
        #expect(try await refusal(otherBundle, try verifier())?.contains("bundle id") == true)
        // Notifications without `data`: a renewal-extension summary, an external purchase token.
        let summary: [String: Any] = [
            "notificationType": "RENEWAL_EXTENSION", "subtype": "SUMMARY", "notificationUUID": UUID().uuidString,
            "signedDate": AppStorePayload.ms(Date()), "version": "2.0",
            "summary": [
                "environment": "Sandbox", "bundleId": SubscriptionsHarness.bundleID,
                "appAppleId": SubscriptionsHarness.appAppleID,
                "requestIdentifier": UUID().uuidString, "succeededCount": 12, "failedCount": 0,
            ],
        ]
        let summarized = try await verifier().notification(try Self.ca.sign(summary))
        #expect(summarized.notification.environment == "sandbox" && summarized.transaction == nil)
        var token = summary
        token["summary"] = nil
        token["notificationType"] = "EXTERNAL_PURCHASE_TOKEN"
        token["externalPurchaseToken"] = [
            "externalPurchaseId": "SANDBOX_3b5f1a", "bundleId": SubscriptionsHarness.bundleID,
            "appAppleId": SubscriptionsHarness.appAppleID, "tokenCreationDate": AppStorePayload.ms(Date()),
        ]
        #expect(try await verifier().notification(try Self.ca.sign(token)).notification.environment == "sandbox")
        #expect(try await refusal(token, production)?.contains("sandbox") == true)
        var neither = summary
        neither["summary"] = nil
        // A shape that names no app and no environment cannot be told apart from another app's:
        // refused, as Apple's library refuses it.
        #expect(try await refusal(neither, try verifier())?.contains("no bundle id") == true)
        var noEnvironment = summary
        noEnvironment["summary"] = ["bundleId": SubscriptionsHarness.bundleID, "appAppleId": SubscriptionsHarness.appAppleID]
        #expect(try await refusal(noEnvironment, try verifier())?.contains("no environment") == true)
        // The embedded transaction is verified too: one from a foreign CA sinks the notification.
        let foreign = try TestCA().sign(payload())
        let smuggled = AppStorePayload.notification("DID_RENEW", transaction: foreign, renewal: nil)
        let smuggledReason = try await refusal(smuggled, try verifier())
        #expect(smuggledReason?.contains("does not validate") == true || smuggledReason?.contains("trusted root") == true)
    }

    /// The real Apple chain shipped in the repository validates to the bundled root while its leaf
    /// is valid, and carries both markers.
    @Test func theRealAppleChainValidatesAgainstTheBundledRoot() async throws {
        let root = try Certificate(pem: SubscriptionsConfiguration.appleRootG3)
        let intermediate = try Certificate(pem: String(decoding: PackageResources.AppleWWDRCA_G6_pem, as: UTF8.self))
        let leaf = try Certificate(pem: String(decoding: PackageResources.AppStoreReceiptSigning_leaf_pem, as: UTF8.self))
        #expect(intermediate.hasExtension(oid: AppStoreVerifier.intermediateOID))
        #expect(leaf.hasExtension(oid: AppStoreVerifier.leafOID))
        #expect(!intermediate.hasExtension(oid: AppStoreVerifier.leafOID))
        _ = try leaf.p256PublicKey()

        let chain = CertificateChainVerifier(roots: [root])
        let inside = ISO8601DateFormatter().date(from: "2026-06-01T00:00:00Z")!
        try chain.verify(leaf: leaf, intermediates: [intermediate], at: inside)
        let after = ISO8601DateFormatter().date(from: "2028-01-01T00:00:00Z")!
        #expect(throws: CertificateChainVerifier.Failure.self) {
            try chain.verify(leaf: leaf, intermediates: [intermediate], at: after)
        }
        // Without the intermediate, or against the test root, there is no path.
        #expect(throws: CertificateChainVerifier.Failure.self) { try chain.verify(leaf: leaf, intermediates: [], at: inside) }
        #expect(throws: CertificateChainVerifier.Failure.self) {
            try CertificateChainVerifier(roots: [Self.ca.root.certificate]).verify(
                leaf: leaf, intermediates: [intermediate], at: inside)
        }
    }

    @Test func productionRequiresTheAppIdentity() async throws {
        #expect(throws: Environment.Failure.self) {
            _ = try SubscriptionsConfiguration(environment: Environment([:]), production: true)
        }
        #expect(throws: Environment.Failure.self) {
            _ = try SubscriptionsConfiguration(
                environment: Environment(["PIER_SUBSCRIPTIONS_APPSTORE_BUNDLE_ID": "dev.pier.app"]), production: true)
        }
        let configuration = try SubscriptionsConfiguration(
            environment: Environment([
                "PIER_SUBSCRIPTIONS_APPSTORE_BUNDLE_ID": "dev.pier.app", "PIER_SUBSCRIPTIONS_APPSTORE_APP_APPLE_ID": "123",
            ]), production: true)
        // App Review buys with sandbox accounts on the production build: accepted by default.
        #expect(configuration.acceptSandbox)
        #expect(configuration.roots.count == 1)
        #expect(throws: Environment.Failure.self) {
            _ = try SubscriptionsConfiguration(
                environment: Environment(["PIER_SUBSCRIPTIONS_APPSTORE_ROOTS": "/nonexistent/root.pem"]), production: false)
        }
    }
}
