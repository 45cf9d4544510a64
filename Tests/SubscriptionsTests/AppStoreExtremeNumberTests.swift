import Foundation
import PierCrypto
import PierModels
import PierRuntime
import PierService
import PierServiceTestSupport
import PierTestSupport
import Testing

@testable import SubscriptionsService

/// Every numeric field Pier reads from App Store signed data, set to numbers at and beyond the
/// edges of what its integers and dates hold. Each must be refused with a reason that names the
/// field, or accepted when it is a value of the field's type; none may trap (a trap ends the
/// process, and in embedded mode the whole API).
@Suite struct AppStoreExtremeNumberTests {
    static let ca = try! TestCA()

    /// JSON number texts, and values that look like numbers to a careless reader.
    static let extremes = [
        "1e300", "-1e300", "1.7e308", "1.8e308", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "253402300800000", "2147483648", "0", "-0", "-1", "1.5", "\"NaN\"", "\"1800000000000\"", "null", "[]",
    ]

    enum Kind: String, CaseIterable {
        case transaction, renewal, notification
    }

    /// A field, what it holds, and whether it may be absent.
    struct Field: CustomStringConvertible {
        enum Holds { case date, int32, int }
        let kind: Kind
        let path: [String]
        let holds: Holds
        let optional: Bool
        var description: String { "\(kind.rawValue).\(path.joined(separator: "."))" }

        /// Whether a value of this text is one the field's type holds.
        func accepts(_ value: String) -> Bool {
            if value == "null" { return optional }
            switch holds {
            case .date: return ["0", "-0", "2147483648", "1800000000000"].contains(value)
            case .int32: return ["0", "-0", "-1"].contains(value)
            case .int: return ["0", "-0", "-1", "2147483648", "253402300800000"].contains(value)
            }
        }
    }

    static let fields: [Field] = [
        Field(kind: .transaction, path: ["purchaseDate"], holds: .date, optional: false),
        Field(kind: .transaction, path: ["expiresDate"], holds: .date, optional: true),
        Field(kind: .transaction, path: ["revocationDate"], holds: .date, optional: true),
        Field(kind: .transaction, path: ["revocationReason"], holds: .int32, optional: true),
        Field(kind: .transaction, path: ["offerType"], holds: .int32, optional: true),
        Field(kind: .transaction, path: ["signedDate"], holds: .date, optional: false),
        Field(kind: .renewal, path: ["autoRenewStatus"], holds: .int32, optional: false),
        Field(kind: .renewal, path: ["gracePeriodExpiresDate"], holds: .date, optional: true),
        Field(kind: .renewal, path: ["expirationIntent"], holds: .int32, optional: true),
        Field(kind: .renewal, path: ["signedDate"], holds: .date, optional: false),
        Field(kind: .notification, path: ["signedDate"], holds: .date, optional: false),
        Field(kind: .notification, path: ["data", "appAppleId"], holds: .int, optional: true),
        Field(kind: .notification, path: ["data", "status"], holds: .int32, optional: true),
    ]

    /// A JWS by the test CA (or with another chain) whose payload has `literal`, written as is,
    /// at `path`.
    static func sign(_ payload: [String: Any], setting path: [String], to literal: String, x5c: [String]? = nil) throws
        -> String
    {
        func set(_ object: [String: Any], _ path: ArraySlice<String>) -> [String: Any] {
            var object = object
            guard let key = path.first else { return object }
            object[key] = path.count == 1 ? "__extreme__" : set(object[key] as? [String: Any] ?? [:], path.dropFirst())
            return object
        }
        let text = String(
            decoding: try JSONSerialization.data(withJSONObject: set(payload, path[...]), options: [.sortedKeys]), as: UTF8.self)
        let json = text.replacingOccurrences(of: "\"__extreme__\"", with: literal)
        return try JWS.sign(payload: Array(json.utf8), header: JWSHeader(alg: "ES256", x5c: x5c ?? ca.x5c), key: ca.signingKey)
    }

    static func payload(_ kind: Kind) throws -> [String: Any] {
        switch kind {
        case .transaction:
            return AppStorePayload.transaction(
                id: "2000000001", original: "2000000000", purchased: Date(), expires: Date().addingTimeInterval(3600))
        case .renewal:
            return AppStorePayload.renewal(original: "2000000000")
        case .notification:
            return AppStorePayload.notification("DID_RENEW", transaction: nil, renewal: nil)
        }
    }

    func verifier() throws -> AppStoreVerifier {
        var configuration = try SubscriptionsConfiguration(
            environment: Environment([
                "PIER_SUBSCRIPTIONS_APPSTORE_BUNDLE_ID": SubscriptionsHarness.bundleID,
                "PIER_SUBSCRIPTIONS_APPSTORE_SANDBOX": "true",
            ]), production: false)
        configuration.roots = [Self.ca.root.certificate]
        return AppStoreVerifier(
            configuration: configuration, http: TestHTTP.client, logger: Logger(service: "subscriptions", level: .error))
    }

    @Test(arguments: fields)
    func everyNumericFieldIsRefusedOrReadNeverTrapped(field: Field) async throws {
        let verifier = try verifier()
        for value in Self.extremes {
            let jws = try Self.sign(try Self.payload(field.kind), setting: field.path, to: value)
            var reason: String?
            do {
                switch field.kind {
                case .transaction: _ = try await verifier.transaction(jws)
                case .renewal: _ = try await verifier.renewalInfo(jws)
                case .notification: _ = try await verifier.notification(jws)
                }
            } catch {
                reason = error.reason
            }
            if value == "1.8e308" {
                // Beyond any double: no JSON reader holds it, so the payload as a whole is refused.
                #expect(reason != nil, "\(field)=\(value) was accepted")
            } else if field.accepts(value) {
                // A signedDate of 1970 verifies nothing: the chain was not valid then.
                if field.path == ["signedDate"] && value != "1800000000000" {
                    #expect(reason?.contains("does not validate") == true, "\(field)=\(value): \(reason ?? "accepted")")
                } else {
                    #expect(reason == nil, "\(field)=\(value): \(reason ?? "")")
                }
            } else {
                let name = field.path.last!
                #expect(reason?.contains(name) == true, "\(field)=\(value): \(reason ?? "accepted")")
            }
        }
    }

    /// The audit's finding: a chain made by anyone, with Apple's real root appended, reached the
    /// conversion of `signedDate` before any signature was checked, and the process died.
    @Test func aForgedChainWithAnOutOfRangeSignedDateIsA422AndTheServiceLivesOn() async throws {
        let apple = try Certificate(pem: SubscriptionsConfiguration.appleRootG3)
        let service = try await SubscriptionsHarness.start(
            database: "pier_test_subscriptions_extremes", ca: Self.ca, roots: [apple, Self.ca.root.certificate])
        let forged = [Self.ca.x5c[0], Self.ca.x5c[1], apple.der.base64]
        for value in ["1e300", "-1e300", "1.8e308", "1.7e308", "9223372036854775807", "-9223372036854775808", "\"NaN\"", "1.5"] {
            let jws = try Self.sign(try Self.payload(.notification), setting: ["signedDate"], to: value, x5c: forged)
            let reply = try await service.postNotification(jws)
            #expect(reply.status == 422, "signedDate \(value): \(reply.status) \(reply.text)")
            // (1.8e308 is beyond any double: the payload as a whole is unreadable.)
            #expect(value == "1.8e308" || reply.text.contains("signedDate"), "signedDate \(value): \(reply.text)")
        }
        #expect(try await service.send("GET", "/subscriptions/plans").status == 200)
        await service.stop()
    }

    /// The last representable instant is stored and read back (and shown) as itself; one
    /// millisecond later is refused.
    @Test func theEdgesOfTheDateRangeAreStoredOrRefused() async throws {
        let service = try await SubscriptionsHarness.start(database: "pier_test_subscriptions_edges", ca: Self.ca)
        try await service.createPlans()
        let user = UUID()
        var transaction = AppStorePayload.transaction(
            id: "4000000001", original: "4000000000", purchased: Date(), expires: Date(), user: user)
        let last = try Self.sign(transaction, setting: ["expiresDate"], to: "253402300799999")
        #expect(try await service.postTransaction(last, user: user).status == 200)
        let status = try await service.status(user)
        #expect(status.active)
        // Shown to the second.
        #expect(abs((status.currentPeriodEnd ?? .distantPast).timeIntervalSince1970 - 253_402_300_799.999) < 1)
        transaction["transactionId"] = "4000000002"
        let beyond = try Self.sign(transaction, setting: ["expiresDate"], to: "253402300800000")
        let refused = try await service.postTransaction(beyond, user: user)
        #expect(refused.status == 422 && refused.text.contains("expiresDate"))
        await service.stop()
    }
}

extension [UInt8] {
    fileprivate var base64: String { Data(self).base64EncodedString() }
}
