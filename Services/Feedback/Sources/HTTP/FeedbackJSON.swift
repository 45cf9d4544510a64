import PierJSON
import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

// Feedback's wire types on the hot paths, written member by member in sorted key order
// (FeedbackJSONTests hold each to what `Encodable` writes for the same value).

extension FeedbackItem: JSONWritable {
    /// Its members' names, escaped once (a writer of items straight from rows shares them):
    /// taken as one value per item or page, not looked up one global at a time per member.
    public struct Keys: Sendable {
        public static let shared = Keys()
        public let assignee = JSONKey("assignee")
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
        writer.member(keys.assignee, ifPresent: assignee)
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
