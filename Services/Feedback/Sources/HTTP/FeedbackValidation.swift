import PierHTTP
import PierIdentity
import PierJSON
import PierModels
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A `POST /feedback` body that passed every check, normalized for storage.
struct ValidFeedback: Sendable {
    var message: String
    var rating: Int?
    var category: String
    var name: String?
    var email: String?
    var appVersion: String?
    var build: String?
    var platform: String?
    var osVersion: String?
    var device: String?
    var locale: String?
    var requestIds: [String]
    var metadata: [String: JSONValue]

    static let maximumMessage = 5000
    static let maximumMetadataBytes = 4096

    /// Checks every field and reports all problems at once, each naming its field.
    init(_ body: CreateFeedback, anonymous: Bool) throws(HTTPError) {
        var errors: [Problem.FieldError] = []
        func fail(_ field: String, _ message: String) { errors.append(.init(field: field, message: message)) }

        message = body.message.trimmingWhitespace()
        // Counted in Unicode scalars, as PostgreSQL's char_length counts.
        let length = message.unicodeScalars.count
        if length == 0 { fail("message", "must not be empty") }
        if length > Self.maximumMessage { fail("message", "must be at most \(Self.maximumMessage) characters (got \(length))") }

        rating = body.rating
        if let rating = body.rating, !(1...5).contains(rating) { fail("rating", "must be an integer from 1 to 5") }

        // What a phone produces (`iOS`, `Bug`) is read case-insensitively and stored lowercase.
        category = body.category?.lowercased() ?? "other"
        if !Vocabulary.categories.contains(category) {
            fail("category", "must be one of \(Vocabulary.list(Vocabulary.categories))")
        }

        platform = body.platform?.lowercased()
        if let platform, !Vocabulary.platforms.contains(platform) {
            fail("platform", "must be one of \(Vocabulary.list(Vocabulary.platforms))")
        }

        func text(_ value: String?, _ field: String, maximum: Int) -> String? {
            guard let value = value?.trimmingWhitespace(), !value.isEmpty else { return nil }
            if value.unicodeScalars.count > maximum { fail(field, "must be at most \(maximum) characters") }
            if value.unicodeScalars.contains(where: { $0.value < 0x20 }) { fail(field, "must not contain control characters") }
            return value
        }
        appVersion = text(body.appVersion, "appVersion", maximum: 64)
        build = text(body.build, "build", maximum: 64)
        osVersion = text(body.osVersion, "osVersion", maximum: 64)
        device = text(body.device, "device", maximum: 128)
        locale = text(body.locale, "locale", maximum: 35)
        // Kept for every sender: the name a signed-in user typed on the form is what they want to
        // be called in a reply, which their account's display name may not be.
        name = text(body.name, "name", maximum: 100)

        email = nil
        if let given = body.email, !given.trimmingWhitespace().isEmpty {
            if let address = EmailAddress(given) {
                // Kept for anonymous senders only: a signed-in sender is reachable through the account.
                email = anonymous ? address.address : nil
            } else {
                fail("email", "must be an email address such as name@example.com")
            }
        }

        requestIds = body.requestIds ?? []
        if requestIds.count > 20 { fail("requestIds", "must hold at most 20 request ids") }
        for (index, id) in requestIds.enumerated()
        where id.isEmpty || id.utf8.count > 128 || !id.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            fail("requestIds[\(index)]", "must be 1 to 128 visible ASCII characters")
        }

        metadata = body.metadata ?? [:]
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            switch value {
            case .string, .number: break
            default: fail("metadata.\(key)", "must be a string or a number (metadata is a flat object)")
            }
            if key.isEmpty || key.utf8.count > 64 { fail("metadata", "keys must be 1 to 64 bytes") }
        }
        if let encoded = try? JSON.encode(metadata), encoded.count > Self.maximumMetadataBytes {
            fail("metadata", "must be at most \(Self.maximumMetadataBytes) bytes as JSON (got \(encoded.count))")
        }

        guard errors.isEmpty else { throw .invalid(errors) }
    }
}
