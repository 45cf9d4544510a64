import PierJSON
import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// A subscription's status and the plans it names, written member by member in sorted key order
// (StatusJSONTests hold each to what `Encodable` writes for the same value).

extension PlanReference: JSONWritable {
    static let idKey = JSONKey("id"), nameKey = JSONKey("name")

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member(Self.idKey, id)
        writer.member(Self.nameKey, name)
        writer.endObject()
    }
}

extension Entitlement: JSONWritable {
    static let expiresAtKey = JSONKey("expiresAt"), keyKey = JSONKey("key")

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member(Self.expiresAtKey, expiresAt)
        writer.member(Self.keyKey, key)
        writer.endObject()
    }
}

extension EntitlementStatus: JSONWritable {
    static let activeKey = JSONKey("active"), expiresAtKey = JSONKey("expiresAt"), keyKey = JSONKey("key")

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member(Self.activeKey, active)
        writer.member(Self.expiresAtKey, ifPresent: expiresAt)
        writer.member(Self.keyKey, key)
        writer.endObject()
    }
}

extension SubscriptionOffer: JSONWritable {
    static let discountTypeKey = JSONKey("discountType"), identifierKey = JSONKey("identifier"), typeKey = JSONKey("type")

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member(Self.discountTypeKey, ifPresent: discountType)
        writer.member(Self.identifierKey, ifPresent: identifier)
        writer.member(Self.typeKey, type)
        writer.endObject()
    }
}

extension SubscriptionRevocation: JSONWritable {
    static let reasonKey = JSONKey("reason"), typeKey = JSONKey("type")

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member(Self.reasonKey, reason)
        writer.member(Self.typeKey, ifPresent: type)
        writer.endObject()
    }
}

extension SubscriptionStatus: JSONWritable {
    enum Keys {
        static let active = JSONKey("active"), checkAgainAt = JSONKey("checkAgainAt"), currency = JSONKey("currency")
        static let currentPeriodEnd = JSONKey("currentPeriodEnd"), currentPeriodStart = JSONKey("currentPeriodStart")
        static let entitlements = JSONKey("entitlements"), environment = JSONKey("environment")
        static let expirationReason = JSONKey("expirationReason"), familyShared = JSONKey("familyShared")
        static let graceUntil = JSONKey("graceUntil"), offer = JSONKey("offer"), plan = JSONKey("plan"), price = JSONKey("price")
        static let priceIncrease = JSONKey("priceIncrease"), renewsTo = JSONKey("renewsTo"), revocation = JSONKey("revocation")
        static let source = JSONKey("source"), status = JSONKey("status"), willRenew = JSONKey("willRenew")
    }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member(Keys.active, active)
        writer.member(Keys.checkAgainAt, checkAgainAt)
        writer.member(Keys.currency, ifPresent: currency)
        writer.member(Keys.currentPeriodEnd, ifPresent: currentPeriodEnd)
        writer.member(Keys.currentPeriodStart, ifPresent: currentPeriodStart)
        writer.member(Keys.entitlements, entitlements)
        writer.member(Keys.environment, ifPresent: environment)
        writer.member(Keys.expirationReason, ifPresent: expirationReason)
        writer.member(Keys.familyShared, ifPresent: familyShared)
        writer.member(Keys.graceUntil, ifPresent: graceUntil)
        writer.member(Keys.offer, ifPresent: offer)
        writer.member(Keys.plan, ifPresent: plan)
        writer.member(Keys.price, ifPresent: price)
        writer.member(Keys.priceIncrease, ifPresent: priceIncrease)
        writer.member(Keys.renewsTo, ifPresent: renewsTo)
        writer.member(Keys.revocation, ifPresent: revocation)
        writer.member(Keys.source, ifPresent: source)
        writer.member(Keys.status, status)
        writer.member(Keys.willRenew, willRenew)
        writer.endObject()
    }
}
