import PierCrypto
import PierEvents
import PierJSON
import PierModels
import PierRuntime
import PierService

/// The endpoints webhooks are sent to, from `PIER_WEBHOOKS`: a JSON array of
/// `{name, url, secret | secretFile, events?}`.
///
/// - `name`: lowercase letters, digits and `-`; deliveries are listed under it.
/// - `url`: where each message is POSTed (http or https).
/// - `secretFile` (or `secret`, for development): one or two `whsec_` secrets separated by
///   whitespace. Every message is signed with each of them, so a receiver holding either
///   verifies it: rotate by adding the new secret, moving receivers to it, then removing the old.
/// - `events`: the types sent (every known type when absent: Pier's, and those the executable's
///   plugins declare).
public struct WebhookEndpointSetting: Sendable, Equatable {
    public let name: String
    public let url: String
    /// The HMAC keys (the secrets' decoded bytes), newest first. Never logged.
    let keys: [[UInt8]]
    public let events: [String]

    public var secretCount: Int { keys.count }

    public init(name: String, url: String, secrets: [String], events: [String], known: WebhookEvents = .builtIn)
        throws(WebhookSettingError)
    {
        guard !name.isEmpty, name.count <= 64,
            name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") })
        else { throw WebhookSettingError("endpoint names are 1–64 lowercase letters, digits and -: \"\(name)\"") }
        guard (url.hasPrefix("https://") && url.count > 8) || (url.hasPrefix("http://") && url.count > 7),
            !url.contains(where: { $0.isWhitespace })
        else { throw WebhookSettingError("endpoint \"\(name)\": the url must be an http(s) URL") }
        guard (1...2).contains(secrets.count) else {
            throw WebhookSettingError("endpoint \"\(name)\": one secret, or two while rotating")
        }
        var keys: [[UInt8]] = []
        for secret in secrets {
            guard secret.hasPrefix("whsec_"), let key = Base64.decoded(secret.dropFirst(6)), (24...64).contains(key.count)
            else {
                throw WebhookSettingError(
                    "endpoint \"\(name)\": a secret is whsec_ and 24 to 64 random bytes in base64 (whsec_ and the output of openssl rand -base64 32)"
                )
            }
            keys.append(key)
        }
        if let unknown = events.first(where: { !known.types.contains($0) }) {
            throw WebhookSettingError(
                "endpoint \"\(name)\": unknown event \"\(unknown)\" (known: \(known.types.joined(separator: ", ")))")
        }
        self.name = name
        self.url = url
        self.keys = keys
        self.events = events.isEmpty ? known.types : known.types.filter(events.contains)
    }

    /// Reads `PIER_WEBHOOKS`, whose endpoints may subscribe to the `known` events.
    static func all(_ environment: Environment, known: WebhookEvents = .builtIn) throws(Environment.Failure)
        -> [WebhookEndpointSetting]
    {
        let variable = "PIER_WEBHOOKS"
        guard let text = environment.string(variable) else { return [] }
        struct Listed: Decodable {
            var name: String
            var url: String
            var secret: String?
            var secretFile: String?
            var events: [String]?
        }
        let listed: [Listed]
        do {
            listed = try WireDecoder.decode([Listed].self, from: Array(text.utf8))
        } catch {
            throw Environment.Failure(
                variable: variable, problem: "must be a JSON array of {name, url, secret or secretFile, events?}: \(error)")
        }
        var endpoints: [WebhookEndpointSetting] = []
        for entry in listed {
            let secrets: String
            switch (entry.secret, entry.secretFile) {
            case (let secret?, nil): secrets = secret
            case (nil, let file?):
                do {
                    secrets = try readFile(file)
                } catch {
                    throw Environment.Failure(
                        variable: variable, problem: "endpoint \"\(entry.name)\": secretFile cannot be read: \(error)")
                }
            default:
                throw Environment.Failure(variable: variable, problem: "endpoint \"\(entry.name)\": give secret or secretFile")
            }
            do {
                endpoints.append(
                    try WebhookEndpointSetting(
                        name: entry.name, url: entry.url, secrets: secrets.split(whereSeparator: \.isWhitespace).map(String.init),
                        events: entry.events ?? [], known: known))
            } catch {
                throw Environment.Failure(variable: variable, problem: error.description)
            }
            if endpoints.dropLast().contains(where: { $0.name == entry.name }) {
                throw Environment.Failure(variable: variable, problem: "endpoint \"\(entry.name)\" is listed twice")
            }
        }
        return endpoints
    }
}

public struct WebhookSettingError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The events webhooks send, and how each comes from the shared event log: Pier's own, and those
/// the plugins of the executable declare (``Service/events``).
public struct WebhookEvents: Sendable {
    struct Entry: Sendable {
        /// The name a message carries and an endpoint subscribes to (`user.deleted`).
        let type: String
        /// The event log's type it comes from (`account.deleted`).
        let logType: String
        /// The payload's field that orders a plugin's event; nil for Pier's (an account's, or a
        /// feedback item's) and for a plugin's sent in one order.
        let orderedBy: String?
        let declared: Bool
    }

    let entries: [Entry]
    /// The event log's type of each webhook type (the log says `account.deleted`): made once,
    /// read for every event of the log.
    let logTypes: [String: String]

    init(entries: [Entry]) {
        self.entries = entries
        logTypes = Dictionary(entries.map { ($0.logType, $0.type) }) { first, _ in first }
    }

    /// Pier's own events.
    public static let builtIn = WebhookEvents(
        entries: [
            (UserCreated.type, "user.created"), (AccountDeleted.type, "user.deleted"), (AccountMerged.type, "user.merged"),
            (FeedbackCreated.type, "feedback.created"),
            (FeedbackUpdated.type, "feedback.updated"), (SubscriptionUpdated.type, "subscription.updated"),
        ].map { Entry(type: $0.1, logType: $0.0, orderedBy: nil, declared: false) })

    /// These and the events `declared` by plugins (one already known is kept as it was).
    public func adding(_ declared: [EventDeclaration]) -> WebhookEvents {
        var entries = self.entries
        for event in declared where !entries.contains(where: { $0.type == event.type || $0.logType == event.type }) {
            entries.append(Entry(type: event.type, logType: event.type, orderedBy: event.orderedBy, declared: true))
        }
        return WebhookEvents(entries: entries)
    }

    /// The types an endpoint may subscribe to.
    public var types: [String] { entries.map(\.type) }

    /// What a message's order is kept within: an account's events (its subscription's too), one
    /// feedback item's, or for a plugin's event the value of the field it is ordered by.
    func subject(of payload: String, type: String) throws -> String {
        if let entry = entries.first(where: { $0.type == type }), entry.declared {
            guard let key = entry.orderedBy else { return type }
            let value = try WireDecoder.decode(JSONValue.self, from: Array(payload.utf8)).objectValue?[key]
            switch value {
            case .string(let text)?: return type + ":" + text
            case .number(let number)?: return type + ":" + JSONValue.text(of: number)
            default: return type
            }
        }
        struct Keys: Decodable {
            var userId: String?
            var feedbackId: String?
        }
        let keys = try WireDecoder.decode(Keys.self, from: Array(payload.utf8))
        if let feedback = keys.feedbackId { return "feedback:" + feedback }
        return "user:" + (keys.userId ?? "")
    }
}

/// A message signed as Standard Webhooks says: `v1,` and the base64 HMAC-SHA256 of
/// `id.timestamp.body`, once per key, separated by spaces.
public enum WebhookSignature {
    public static func header(id: String, timestamp: Int, body: [UInt8], keys: [[UInt8]]) -> String {
        let signed = Array("\(id).\(timestamp).".utf8) + body
        return keys.map { "v1," + Base64.encoded(HMACSHA256.authenticate(signed, key: $0)) }.joined(separator: " ")
    }
}
