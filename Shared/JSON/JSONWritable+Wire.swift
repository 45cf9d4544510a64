import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// The wire types on the hot paths, written member by member in sorted key order (JSONTests
// hold each to what `Encodable` writes for the same value).

extension JSONValue: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        switch self {
        case .null: writer.writeNull()
        case .bool(let value): writer.write(value)
        case .number(let value):
            if value.rounded() == value, abs(value) < 1e15 {
                writer.write(Int(value))
            } else if value.isFinite {
                var text = value.description
                if text.hasSuffix(".0") { text.removeLast(2) }
                text.withUTF8 { writer.writeRaw($0) }
            } else {
                // Never parsed from JSON; `Encodable` refuses it, a response writes null.
                writer.writeNull()
            }
        case .string(let value): writer.write(value)
        case .array(let values): writer.write(values)
        case .object(let members): writer.write(members)
        }
    }
}

extension JSONWriter {
    /// An object from a dictionary, its keys in sorted order.
    public mutating func write<Value: JSONWritable>(_ members: [String: Value]) {
        beginObject()
        for (key, value) in members.sorted(by: { $0.key < $1.key }) {
            member(named: key)
            write(value)
        }
        endObject()
    }
}

extension FeedbackItem: JSONWritable {
    /// Its members' names, escaped once (a writer of items straight from rows shares them):
    /// taken as one value per item or page, not looked up one global at a time per member.
    public struct Keys: Sendable {
        public static let shared = Keys()
        public let appVersion = JSONKey("appVersion"), build = JSONKey("build"), category = JSONKey("category")
        public let createdAt = JSONKey("createdAt"), device = JSONKey("device"), duplicateOf = JSONKey("duplicateOf")
        public let email = JSONKey("email"), history = JSONKey("history"), id = JSONKey("id")
        public let internalNote = JSONKey("internalNote"), locale = JSONKey("locale"), message = JSONKey("message")
        public let metadata = JSONKey("metadata"), moderation = JSONKey("moderation"), name = JSONKey("name")
        public let osVersion = JSONKey("osVersion"), platform = JSONKey("platform"), rating = JSONKey("rating")
        public let replies = JSONKey("replies"), requestIds = JSONKey("requestIds"), status = JSONKey("status")
        public let statusChanges = JSONKey("statusChanges"), tags = JSONKey("tags")
        public let updatedAt = JSONKey("updatedAt"), userId = JSONKey("userId")
    }

    public func write(to writer: inout JSONWriter) {
        let keys = Keys.shared
        writer.beginObject()
        writer.member(keys.appVersion, ifPresent: appVersion)
        writer.member(keys.build, ifPresent: build)
        writer.member(keys.category, category)
        writer.member(keys.createdAt, createdAt)
        writer.member(keys.device, ifPresent: device)
        writer.member(keys.duplicateOf, ifPresent: duplicateOf)
        writer.member(keys.email, ifPresent: email)
        writer.member(keys.history, ifPresent: history)
        writer.member(keys.id, id)
        writer.member(keys.internalNote, ifPresent: internalNote)
        writer.member(keys.locale, ifPresent: locale)
        writer.member(keys.message, message)
        writer.member(keys.metadata)
        writer.write(metadata)
        writer.member(keys.moderation, ifPresent: moderation)
        writer.member(keys.name, ifPresent: name)
        writer.member(keys.osVersion, ifPresent: osVersion)
        writer.member(keys.platform, ifPresent: platform)
        writer.member(keys.rating, ifPresent: rating)
        writer.member(keys.replies, ifPresent: replies)
        writer.member(keys.requestIds, requestIds)
        writer.member(keys.status, status)
        writer.member(keys.statusChanges, ifPresent: statusChanges)
        writer.member(keys.tags, ifPresent: tags)
        writer.member(keys.updatedAt, updatedAt)
        writer.member(keys.userId, ifPresent: userId)
        writer.endObject()
    }
}

extension CreateFeedback: JSONWritable {
    /// As sent, `feedback` written as `message` (what an idempotency key's request hash is of).
    public func write(to writer: inout JSONWriter) {
        // Its members are a feedback item's, by the same names.
        let keys = FeedbackItem.Keys.shared
        writer.beginObject()
        writer.member(keys.appVersion, ifPresent: appVersion)
        writer.member(keys.build, ifPresent: build)
        writer.member(keys.category, ifPresent: category)
        writer.member(keys.device, ifPresent: device)
        writer.member(keys.email, ifPresent: email)
        writer.member(keys.id, ifPresent: id)
        writer.member(keys.locale, ifPresent: locale)
        writer.member(keys.message, message)
        if let metadata {
            writer.member(keys.metadata)
            writer.write(metadata)
        }
        writer.member(keys.name, ifPresent: name)
        writer.member(keys.osVersion, ifPresent: osVersion)
        writer.member(keys.platform, ifPresent: platform)
        writer.member(keys.rating, ifPresent: rating)
        writer.member(keys.requestIds, ifPresent: requestIds)
        writer.endObject()
    }
}

extension FeedbackChange: JSONWritable {
    static let actorKey = JSONKey("actor"), changedAtKey = JSONKey("changedAt"), changesKey = JSONKey("changes")

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member(Self.actorKey, actor)
        writer.member(Self.changedAtKey, changedAt)
        writer.member(Self.changesKey)
        writer.write(changes)
        writer.endObject()
    }
}

extension FeedbackReply: JSONWritable {
    static let authorIdKey = JSONKey("authorId"), createdAtKey = JSONKey("createdAt"), deliveryKey = JSONKey("delivery")
    static let idKey = JSONKey("id"), messageKey = JSONKey("message")

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member(Self.authorIdKey, ifPresent: authorId)
        writer.member(Self.createdAtKey, createdAt)
        writer.member(Self.deliveryKey, ifPresent: delivery)
        writer.member(Self.idKey, id)
        writer.member(Self.messageKey, message)
        writer.endObject()
    }
}

extension FeedbackStatusChange: JSONWritable {
    static let changedAtKey = JSONKey("changedAt"), statusKey = JSONKey("status")

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member(Self.changedAtKey, changedAt)
        writer.member(Self.statusKey, status)
        writer.endObject()
    }
}

extension FeedbackChange.FieldChange: JSONWritable {
    static let fromKey = JSONKey("from"), toKey = JSONKey("to")

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member(Self.fromKey, from)
        writer.member(Self.toKey, to)
        writer.endObject()
    }
}

extension FeedbackPage: JSONWritable {
    public enum Keys {
        public static let items = JSONKey("items"), nextCursor = JSONKey("nextCursor"), total = JSONKey("total")
    }

    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member(Keys.items, items)
        writer.member(Keys.nextCursor, ifPresent: nextCursor)
        writer.member(Keys.total, ifPresent: total)
        writer.endObject()
    }
}

/// A generic type has no stored statics: the envelope's one key, escaped once for all of them.
private let itemListItemsKey = JSONKey("items")

extension ItemList: JSONWritable where Item: JSONWritable {
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member(itemListItemsKey, items)
        writer.endObject()
    }
}

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
