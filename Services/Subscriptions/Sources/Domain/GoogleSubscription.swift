import PierJSON
import PierModels
import PierRuntime

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A subscription purchase as the Play Developer API describes it (`SubscriptionPurchaseV2`):
/// the parts Pier keeps and decides with. The whole answer is kept beside it.
struct GoogleSubscription: Sendable, Equatable {
    /// Google's `subscriptionState`.
    enum State: String, Sendable {
        case active = "SUBSCRIPTION_STATE_ACTIVE"
        case canceled = "SUBSCRIPTION_STATE_CANCELED"
        case inGracePeriod = "SUBSCRIPTION_STATE_IN_GRACE_PERIOD"
        case onHold = "SUBSCRIPTION_STATE_ON_HOLD"
        case paused = "SUBSCRIPTION_STATE_PAUSED"
        case expired = "SUBSCRIPTION_STATE_EXPIRED"
        case pending = "SUBSCRIPTION_STATE_PENDING"
        case pendingCanceled = "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED"
        case unspecified = "SUBSCRIPTION_STATE_UNSPECIFIED"
    }

    var state: State
    var productID: String
    var basePlanID: String?
    var offerID: String?
    var startTime: Date?
    var expiryTime: Date?
    var autoRenew: Bool
    var trial: Bool
    var test: Bool
    var acknowledged: Bool
    /// The recurring price in minor units of `currency`.
    var price: Int?
    var currency: String?
    var pausedUntil: Date?
    var linkedPurchaseToken: String?
    var latestOrderID: String?
    /// `externalAccountIdentifiers.obfuscatedExternalAccountId`: what the app set at purchase
    /// (Pier's clients set the user id).
    var accountID: String?
    var payload: JSONValue

    enum Failure: Error, CustomStringConvertible {
        case malformed(String)
        /// A purchase, with a number Pier cannot hold (a price beyond any plan's): final.
        case outOfRange(String)
        var description: String {
            switch self {
            case .malformed(let why): "Google's answer is not a subscription purchase: \(why)"
            case .outOfRange(let why): "Google's purchase holds a number Pier cannot hold: \(why)"
            }
        }
    }

    /// Reads the API's JSON; the line item deciding the subscription is the one that expires last.
    init(json bytes: [UInt8]) throws(Failure) {
        guard let payload = try? WireDecoder.decode(JSONValue.self, from: bytes), let object = payload.objectValue else {
            throw .malformed("not a JSON object")
        }
        guard case .string(let stateText)? = object["subscriptionState"] else { throw .malformed("no subscriptionState") }
        let items = object["lineItems"]?.arrayValue?.compactMap(\.objectValue) ?? []
        let item = items.max { Self.time($0["expiryTime"]) ?? .distantPast < Self.time($1["expiryTime"]) ?? .distantPast }
        guard let item, case .string(let product)? = item["productId"], !product.isEmpty else {
            throw .malformed("no line item with a productId")
        }
        state = State(rawValue: stateText) ?? .unspecified
        productID = product
        let offer = item["offerDetails"]?.objectValue
        basePlanID = offer?["basePlanId"]?.stringValue
        offerID = offer?["offerId"]?.stringValue
        startTime = Self.time(object["startTime"])
        expiryTime = Self.time(item["expiryTime"])
        let plan = item["autoRenewingPlan"]?.objectValue
        autoRenew = plan?["autoRenewEnabled"]?.boolValue ?? false
        trial = item["offerPhase"]?.objectValue?["freeTrial"] != nil
        test = object["testPurchase"] != nil
        acknowledged = object["acknowledgementState"]?.stringValue == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
        let money = plan?["recurringPrice"]?.objectValue
        currency = money?["currencyCode"]?.stringValue
        price = try money.flatMap(Self.minorUnits)
        pausedUntil = Self.time(object["pausedStateContext"]?.objectValue?["autoResumeTime"])
        linkedPurchaseToken = object["linkedPurchaseToken"]?.stringValue
        latestOrderID = item["latestSuccessfulOrderId"]?.stringValue ?? object["latestOrderId"]?.stringValue
        accountID = object["externalAccountIdentifiers"]?.objectValue?["obfuscatedExternalAccountId"]?.stringValue
        self.payload = payload
    }

    /// An RFC 3339 time (`2026-12-06T10:00:00.123Z`).
    static func time(_ value: JSONValue?) -> Date? {
        guard case .string(let text)? = value, let seconds = CivilDate.parse(text) else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }

    /// A `Money` (`units`, a decimal string, and `nanos`) in minor units of its currency:
    /// 4.99 USD is 499, 500 JPY is 500; nil when it is not whole minor units of a known form.
    /// Every number is checked before arithmetic: an amount beyond ``Price/maximumMinorUnits``
    /// (or one that would overflow on the way) is ``Failure/outOfRange(_:)``.
    static func minorUnits(_ money: [String: JSONValue]) throws(Failure) -> Int? {
        guard case .string(let code)? = money["currencyCode"], code.count == 3 else { return nil }
        let units: Int? =
            switch money["units"] {
            case .string(let text)?: Int(text)
            case .number(let number)?: number.rounded() == number && abs(number) < 1e15 ? Int(number) : nil
            case nil: 0
            default: nil
            }
        let nanos: Int? =
            switch money["nanos"] {
            case .number(let number)?: number.rounded() == number && abs(number) < 1e9 ? Int(number) : nil
            case nil: 0
            default: nil
            }
        guard let units, let nanos, units >= 0, nanos >= 0 else {
            if case .string(let text)? = money["units"], text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), !text.isEmpty {
                throw .outOfRange("a price of \(text.prefix(40)) \(code)")
            }
            return nil
        }
        let scale = Price.minorUnitsPerUnit(of: code)
        let nanosPerMinor = 1_000_000_000 / scale
        guard nanos % nanosPerMinor == 0 else { return nil }
        let (scaled, overflow) = units.multipliedReportingOverflow(by: scale)
        guard !overflow, scaled <= Price.maximumMinorUnits - nanos / nanosPerMinor else {
            throw .outOfRange("a price of \(units) \(code)")
        }
        return scaled + nanos / nanosPerMinor
    }
}
