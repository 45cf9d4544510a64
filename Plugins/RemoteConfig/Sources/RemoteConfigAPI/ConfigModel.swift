import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// One parameter of the config: its type, the value everyone gets, and the rules that give some
/// callers another (the first rule whose condition holds wins).
public struct ConfigParameter: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, CaseIterable { case string, number, bool, json }

    /// `new_paywall`: letters, digits, `_`, `.` and `-`, 1 to 64.
    public var key: String
    public var type: Kind
    public var defaultValue: JSONValue
    public var description: String?
    public var rules: [ConfigRule]

    public init(key: String, type: Kind, defaultValue: JSONValue, description: String? = nil, rules: [ConfigRule] = []) {
        (self.key, self.type, self.defaultValue, self.description, self.rules) = (key, type, defaultValue, description, rules)
    }

    enum CodingKeys: String, CodingKey { case key, type, defaultValue, description, rules }

    /// `rules` may be left out (none).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        key = try container.decode(String.self, forKey: .key)
        type = try container.decode(Kind.self, forKey: .type)
        defaultValue = try container.decode(JSONValue.self, forKey: .defaultValue)
        description = try container.decodeIfPresent(String.self, forKey: .description)
        rules = try container.decodeIfPresent([ConfigRule].self, forKey: .rules) ?? []
    }
}

/// A rule: the value a caller gets when the condition holds.
public struct ConfigRule: Codable, Sendable, Equatable {
    /// What the team calls it ("Pro users on iOS"); says why a caller got its value.
    public var name: String
    public var when: ConfigCondition
    public var value: JSONValue

    public init(name: String, when: ConfigCondition, value: JSONValue) {
        (self.name, self.when, self.value) = (name, when, value)
    }
}

/// What a caller must be for a rule to apply: every part given must hold (an empty condition
/// holds for everyone).
public struct ConfigCondition: Codable, Sendable, Equatable {
    /// `ios`, `android`, … (the app's `X-App-Platform`).
    public var platforms: [String]?
    /// The app's version at least this (semantic: `2.10.0` is after `2.9.1`).
    public var appVersionAtLeast: String?
    /// The app's version below this.
    public var appVersionBelow: String?
    /// Language tags or their starts: `fr` holds for `fr-CA`.
    public var locales: [String]?
    /// ISO 3166 countries, where the deployment tells the caller's country.
    public var countries: [String]?
    /// Signed in (true) or anonymous (false).
    public var signedIn: Bool?
    /// Any of these entitlements, now (the subscriptions plugin's).
    public var entitlements: [String]?
    /// These accounts.
    public var userIds: [UUID]?
    /// This share of installations, 0 to 100, stable per installation and parameter.
    public var rolloutPercent: Double?

    public init(
        platforms: [String]? = nil, appVersionAtLeast: String? = nil, appVersionBelow: String? = nil,
        locales: [String]? = nil, countries: [String]? = nil, signedIn: Bool? = nil, entitlements: [String]? = nil,
        userIds: [UUID]? = nil, rolloutPercent: Double? = nil
    ) {
        (self.platforms, self.appVersionAtLeast, self.appVersionBelow) = (platforms, appVersionAtLeast, appVersionBelow)
        (self.locales, self.countries, self.signedIn) = (locales, countries, signedIn)
        (self.entitlements, self.userIds, self.rolloutPercent) = (entitlements, userIds, rolloutPercent)
    }
}

/// A published version of the config.
public struct ConfigVersion: Codable, Sendable, Equatable {
    public var version: Int
    public var parameters: [ConfigParameter]
    public var note: String
    public var publishedBy: UUID
    public var publishedAt: Date
    /// The version this one published again (a rollback).
    public var restores: Int?

    public init(
        version: Int, parameters: [ConfigParameter], note: String, publishedBy: UUID, publishedAt: Date, restores: Int? = nil
    ) {
        (self.version, self.parameters, self.note) = (version, parameters, note)
        (self.publishedBy, self.publishedAt, self.restores) = (publishedBy, publishedAt, restores)
    }
}

/// `POST /config/versions`: the parameters to publish, and the version they were edited from
/// (0 before the first): another publication since is a 409, never overwritten.
public struct PublishConfig: Codable, Sendable, Equatable {
    public var basedOn: Int
    public var parameters: [ConfigParameter]
    public var note: String?

    public init(basedOn: Int, parameters: [ConfigParameter], note: String? = nil) {
        (self.basedOn, self.parameters, self.note) = (basedOn, parameters, note)
    }
}

/// `GET /config`: every parameter's value for the caller, and the version they come from.
public struct ConfigAnswer: Codable, Sendable, Equatable {
    public var version: Int
    public var values: [String: JSONValue]

    public init(version: Int, values: [String: JSONValue]) { (self.version, self.values) = (version, values) }
}

/// A message of `GET /config/stream`: what the caller's config depends on besides the app's own
/// headers. When it changes, the app asks `GET /config` again.
public struct ConfigSignal: Codable, Sendable, Equatable {
    public var version: Int
    public var entitlements: [String]

    public init(version: Int, entitlements: [String]) { (self.version, self.entitlements) = (version, entitlements) }
}

/// `POST /config/preview`: who to evaluate for.
public struct ConfigPreviewRequest: Codable, Sendable, Equatable {
    public var userId: UUID?
    public var installationId: String?
    public var platform: String?
    public var appVersion: String?
    public var locale: String?
    public var country: String?

    public init(
        userId: UUID? = nil, installationId: String? = nil, platform: String? = nil, appVersion: String? = nil,
        locale: String? = nil, country: String? = nil
    ) {
        (self.userId, self.installationId, self.platform) = (userId, installationId, platform)
        (self.appVersion, self.locale, self.country) = (appVersion, locale, country)
    }
}

/// What a caller gets, and why: the rule that gave each value, or the default.
public struct ConfigPreview: Codable, Sendable, Equatable {
    public var version: Int
    public var values: [String: JSONValue]
    /// Per key: `default`, or the name of the rule.
    public var reasons: [String: String]
    /// The entitlements the caller has now (what rules on entitlements were judged by).
    public var entitlements: [String]

    public init(version: Int, values: [String: JSONValue], reasons: [String: String], entitlements: [String]) {
        (self.version, self.values, self.reasons, self.entitlements) = (version, values, reasons, entitlements)
    }
}

/// The list of published versions, newest first.
public struct ConfigVersions: Codable, Sendable, Equatable {
    public var items: [ConfigVersion]

    public init(items: [ConfigVersion]) { self.items = items }
}
