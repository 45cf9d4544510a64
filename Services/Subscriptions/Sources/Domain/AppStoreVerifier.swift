import PierCrypto
import PierHTTP
import PierJSON
import PierModels
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The values a bounded App Store integer may take, and how to say so.
protocol AppStoreIntegerRange {
    static var range: ClosedRange<Int64> { get }
    /// What the field must be, for the refusal ("must be …").
    static var expected: String { get }
}

/// An integer from App Store signed data, read through a JSON number and refused — as a
/// decoding error that names the field — unless it is whole and within `Range`. Foundation's
/// own integer decoding reports an out-of-range number as an unreadable document, naming no
/// field, and a number that fits `Int64` can still overflow a date or a column.
struct AppStoreInteger<Range: AppStoreIntegerRange>: Decodable, Sendable, Equatable {
    let value: Int64

    init?(value: Int64) {
        guard Range.range.contains(value) else { return nil }
        self.value = value
    }

    init?(json: JSONValue) {
        guard case .number(let number) = json, let value = Int64(exactly: number) else {
            return nil
        }
        self.init(value: value)
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let value = Self(json: try container.decode(JSONValue.self)) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "must be \(Range.expected)")
        }
        self = value
    }
}

/// Milliseconds since 1970, as Apple sends times: up to the end of the year 9999, what
/// PostgreSQL's timestamps and ISO 8601 hold.
enum Milliseconds: AppStoreIntegerRange {
    static let range: ClosedRange<Int64> = 0...253_402_300_799_999
    static let expected = "milliseconds since 1970, before the year 10000"
}

/// Apple's small enumerations (`offerType`, `autoRenewStatus`, …), kept in `int` columns.
enum Code: AppStoreIntegerRange {
    static let range: ClosedRange<Int64> = Int64(Int32.min)...Int64(Int32.max)
    static let expected = "an integer from \(Int32.min) to \(Int32.max)"
}

/// Identifiers such as `appAppleId`: integers a JSON number holds exactly.
enum Identifier: AppStoreIntegerRange {
    static let range: ClosedRange<Int64> = -(1 << 53)...(1 << 53)
    static let expected = "an integer from -2^53 to 2^53"
}

typealias AppStoreDate = AppStoreInteger<Milliseconds>
typealias AppStoreCode = AppStoreInteger<Code>

extension AppStoreInteger where Range == Milliseconds {
    var date: Date { Date(timeIntervalSince1970: Double(value) / 1000) }
}

extension AppStoreInteger where Range == Code {
    var int32: Int32 { Int32(value) }
}

/// A verified StoreKit 2 transaction (`JWSTransactionDecodedPayload`): the fields Pier reads.
struct AppStoreTransaction: Decodable, Sendable {
    var transactionId: String
    var originalTransactionId: String
    var bundleId: String
    var productId: String
    var type: String
    var purchaseDate: AppStoreDate
    var expiresDate: AppStoreDate?
    var revocationDate: AppStoreDate?
    var revocationReason: AppStoreCode?
    var offerType: AppStoreCode?
    var appAccountToken: String?
    var environment: String
    /// Absent in some of Apple's payloads: then the time of receipt stands for it.
    var signedDate: AppStoreDate?

    static let autoRenewable = "Auto-Renewable Subscription"
}

/// A verified renewal info (`JWSRenewalInfoDecodedPayload`).
struct AppStoreRenewalInfo: Decodable, Sendable {
    var originalTransactionId: String
    var autoRenewStatus: AppStoreCode
    var autoRenewProductId: String?
    var isInBillingRetryPeriod: Bool?
    var gracePeriodExpiresDate: AppStoreDate?
    var expirationIntent: AppStoreCode?
    var environment: String
    /// Absent in some of Apple's payloads: then the time of receipt stands for it.
    var signedDate: AppStoreDate?
}

/// A verified App Store Server Notification V2 (`responseBodyV2DecodedPayload`). It carries
/// one of `data` (about a subscription), `summary` (a renewal-extension request's outcome),
/// `appData` (about the app: RESCIND_CONSENT) or `externalPurchaseToken`; each names the app,
/// and the environment one way or another. A shape Apple adds later may carry none of them.
struct AppStoreNotification: Decodable, Sendable {
    struct Payload: Decodable, Sendable {
        var appAppleId: AppStoreInteger<Identifier>?
        var bundleId: String?
        var environment: String?
        var signedTransactionInfo: String?
        var signedRenewalInfo: String?
        var status: AppStoreCode?
    }
    struct ExternalPurchaseToken: Decodable, Sendable {
        var externalPurchaseId: String?
        var appAppleId: AppStoreInteger<Identifier>?
        var bundleId: String?
    }
    var notificationType: String
    var subtype: String?
    var notificationUUID: UUID
    /// Absent in some of Apple's payloads: then the time of receipt stands for it.
    var signedDate: AppStoreDate?
    var data: Payload?
    var summary: Payload?
    var appData: Payload?
    var externalPurchaseToken: ExternalPurchaseToken?

    /// The app and environment the notification declares, from whichever part it carries.
    var declared: (bundleId: String?, appAppleId: Int64?, environment: String?)? {
        if let part = data ?? summary ?? appData { return (part.bundleId, part.appAppleId?.value, part.environment) }
        if let token = externalPurchaseToken {
            // Apple's rule: sandbox tokens' ids start with SANDBOX.
            let sandbox = token.externalPurchaseId?.hasPrefix("SANDBOX") ?? false
            return (token.bundleId, token.appAppleId?.value, sandbox ? "Sandbox" : "Production")
        }
        return nil
    }
}

/// One verified piece of signed App Store data: its typed fields and the whole payload (kept
/// as the record of what Apple said).
struct Verified<Value: Sendable>: Sendable {
    var value: Value
    var payload: JSONValue
    /// `production` or `sandbox`.
    var environment: String
    /// When Apple signed it (`signedDate`), or when Pier received it if the payload has none.
    var signedAt: Date
}

/// Verifies App Store signed data (JWS with an `x5c` chain) the way Apple's App Store Server
/// Library does: ES256 only; exactly three certificates; the intermediate carries the WWDR OID
/// and the leaf the receipt-signing OID; the chain from the leaf through `x5c[1]` validates to a
/// configured root as of the payload's `signedDate` (the time of receipt when it has none); the
/// signature verifies with the leaf's key; unless revocation checks are off, the chain is valid
/// now too and neither the leaf nor the intermediate is revoked (OCSP, ``RevocationChecker``);
/// then the app's bundle id (and, in production, its Apple ID) and the environment must match
/// the configuration.
struct AppStoreVerifier: Sendable {
    /// Why signed data was refused; the reason is safe to return to the client.
    struct Failure: Error, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    static let intermediateOID = "1.2.840.113635.100.6.2.1"
    static let leafOID = "1.2.840.113635.100.6.11.1"
    /// A notification carries two signed payloads of its own, each with a certificate chain.
    static let maximumLength = 64 * 1024

    let chain: CertificateChainVerifier
    let revocation: RevocationChecker
    let bundleID: String
    let appAppleID: Int?
    let acceptSandbox: Bool
    let production: Bool

    init(
        configuration: SubscriptionsConfiguration, http: HTTPClient, logger: Logger,
        clock: @escaping @Sendable () -> Date = Date.init
    ) {
        chain = CertificateChainVerifier(roots: configuration.roots)
        revocation = RevocationChecker(
            mode: configuration.revocation, roots: configuration.roots, http: http,
            timeout: .seconds(configuration.ocspTimeoutSeconds), logger: logger, clock: clock)
        bundleID = configuration.bundleID
        appAppleID = configuration.appAppleID
        acceptSandbox = configuration.acceptSandbox
        production = configuration.production
    }

    func transaction(_ compact: String) async throws(Failure) -> Verified<AppStoreTransaction> {
        let (transaction, payload, signedAt) = try await verify(compact, as: AppStoreTransaction.self)
        guard transaction.bundleId == bundleID else {
            throw Failure(reason: "the transaction is for bundle id \(transaction.bundleId), not this app's")
        }
        return Verified(
            value: transaction, payload: payload, environment: try environment(transaction.environment), signedAt: signedAt)
    }

    func renewalInfo(_ compact: String) async throws(Failure) -> Verified<AppStoreRenewalInfo> {
        let (renewal, payload, signedAt) = try await verify(compact, as: AppStoreRenewalInfo.self)
        return Verified(value: renewal, payload: payload, environment: try environment(renewal.environment), signedAt: signedAt)
    }

    /// The notification and its embedded signed transaction and renewal info, all verified.
    func notification(_ compact: String) async throws(Failure) -> (
        notification: Verified<AppStoreNotification>, transaction: Verified<AppStoreTransaction>?,
        renewal: Verified<AppStoreRenewalInfo>?
    ) {
        let (notification, payload, signedAt) = try await verify(compact, as: AppStoreNotification.self)
        // The app first, as Apple's library checks it: another app's notification is refused
        // whatever else it lacks.
        if let declared = notification.declared, let bundleId = declared.bundleId, bundleId != bundleID {
            throw Failure(reason: "the notification is for bundle id \(bundleId), not this app's")
        }
        // A notification that names no app or no environment is not this app's either (Apple's
        // library refuses it alike): nothing in it can be told apart from another app's.
        guard let declared = notification.declared, declared.bundleId != nil else {
            throw Failure(reason: "the notification names no bundle id, so it is not this app's")
        }
        guard let environmentName = declared.environment else {
            throw Failure(reason: "the notification names no environment")
        }
        let environment = try environment(environmentName)
        guard declared.bundleId == bundleID else {
            throw Failure(reason: "the notification is for bundle id \(declared.bundleId ?? "none"), not this app's")
        }
        if environment == "production", let appAppleID, declared.appAppleId != Int64(appAppleID) {
            throw Failure(
                reason: "the notification is for app Apple ID \(declared.appAppleId.map(String.init) ?? "none"), not this app's")
        }
        var transaction: Verified<AppStoreTransaction>? = nil
        var renewal: Verified<AppStoreRenewalInfo>? = nil
        if let jws = notification.data?.signedTransactionInfo { transaction = try await self.transaction(jws) }
        if let jws = notification.data?.signedRenewalInfo { renewal = try await renewalInfo(jws) }
        return (
            Verified(value: notification, payload: payload, environment: environment, signedAt: signedAt), transaction, renewal
        )
    }

    private func environment(_ declared: String) throws(Failure) -> String {
        switch declared {
        case "Production": return "production"
        case "Sandbox":
            guard acceptSandbox else { throw Failure(reason: "sandbox purchases are not accepted here") }
            return "sandbox"
        default: throw Failure(reason: "the environment \(declared) is not accepted")
        }
    }

    /// The generic checks of every piece of App Store signed data; returns the decoded payload.
    /// The chain is built as Apple's libraries build it: leaf → `x5c[1]` → a configured root.
    /// `x5c` must hold three certificates, but the third is not read (Apple's own test data
    /// carries the root in another encoding there).
    func verify<T: Decodable>(_ compact: String, as type: T.Type) async throws(Failure) -> (T, JSONValue, Date) {
        let now = Date()
        let jws: JWS
        do {
            jws = try JWS(compact: compact, maximumLength: Self.maximumLength)
        } catch {
            throw Failure(reason: "\(error)")
        }
        guard jws.header.alg == "ES256" else { throw Failure(reason: "the algorithm \(jws.header.alg) is not accepted") }
        let (leaf, intermediate) = try Self.certificates(of: jws)
        // The chain must have been valid when Apple signed, not necessarily now (Apple's rule);
        // without a signedDate, at the time of receipt, as Apple's libraries do. The date is read
        // before the signature is checked, so it is untrusted here: anything but a whole number
        // of milliseconds from 1970 to 9999 is refused before any use.
        let payload = try? WireDecoder.decode(JSONValue.self, from: jws.payload)
        guard let payload, let object = payload.objectValue else { throw Failure(reason: "the payload is not a JSON object") }
        // PostgreSQL's jsonb cannot hold U+0000: signed data carrying one could never be stored.
        guard !Self.holdsNUL(payload) else { throw Failure(reason: "the payload contains the character U+0000") }
        var signedAt = now
        if let signedValue = object["signedDate"] {
            guard let signed = AppStoreDate(json: signedValue) else {
                throw Failure(reason: "the payload's signedDate must be \(Milliseconds.expected)")
            }
            signedAt = signed.date
        }
        let built: [Certificate]
        do {
            built = try chain.verify(leaf: leaf, intermediates: [intermediate], at: signedAt)
        } catch {
            throw Failure(reason: error.reason)
        }
        let key: P256PublicKey
        do {
            key = try leaf.p256PublicKey()
        } catch {
            throw Failure(reason: "the leaf certificate's key is not a P-256 key")
        }
        guard jws.signature.count == 64, key.isValidSignature(jws.signature, for: jws.signingInput) else {
            throw Failure(reason: "the signature does not verify")
        }
        if revocation.mode != .off {
            // Apple's online checks: the chain valid now as well, none of it revoked.
            do {
                try chain.verify(leaf: leaf, intermediates: [intermediate], at: now)
                try await revocation.check(built)
            } catch let failure as CertificateChainVerifier.Failure {
                throw Failure(reason: "as of now, \(failure.reason)")
            } catch let failure as RevocationChecker.Failure {
                throw Failure(reason: failure.reason)
            } catch {
                throw Failure(reason: "\(error)")
            }
        }
        do {
            return (try WireDecoder.decode(T.self, from: jws.payload), payload, signedAt)
        } catch let error as DecodingError {
            guard case .fields(let issues) = JSON.issue(for: error), let issue = issues.first else {
                throw Failure(reason: "the payload is not the object expected")
            }
            throw Failure(reason: "the payload's \(issue.field) \(issue.message)")
        } catch {
            throw Failure(reason: "the payload is not JSON")
        }
    }

    /// The leaf and intermediate certificates of `jws`'s `x5c`, each with Apple's marker.
    static func certificates(of jws: JWS) throws(Failure) -> (leaf: Certificate, intermediate: Certificate) {
        guard let x5c = jws.header.x5c else { throw Failure(reason: "the header has no x5c certificate chain") }
        guard x5c.count == 3 else {
            throw Failure(reason: "the x5c chain must hold exactly 3 certificates, it holds \(x5c.count)")
        }
        var certificates: [Certificate] = []
        for (index, encoded) in x5c.prefix(2).enumerated() {
            guard let der = Base64.decoded(encoded), let certificate = try? Certificate(der: der) else {
                throw Failure(reason: "certificate \(index) of x5c is not a base64 DER certificate")
            }
            certificates.append(certificate)
        }
        let (leaf, intermediate) = (certificates[0], certificates[1])
        guard intermediate.hasExtension(oid: Self.intermediateOID) else {
            throw Failure(reason: "the intermediate certificate lacks the Apple WWDR marker (\(Self.intermediateOID))")
        }
        guard leaf.hasExtension(oid: Self.leafOID) else {
            throw Failure(reason: "the leaf certificate lacks the App Store signing marker (\(Self.leafOID))")
        }
        return (leaf, intermediate)
    }

    /// Whether a string or a key anywhere in `value` holds U+0000.
    static func holdsNUL(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let text): return text.utf8.contains(0)
        case .array(let items): return items.contains(where: holdsNUL)
        case .object(let members): return members.contains { $0.key.utf8.contains(0) || holdsNUL($0.value) }
        default: return false
        }
    }
}
