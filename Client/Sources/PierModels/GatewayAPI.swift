#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// What every Pier server answers beside its services' endpoints: where things are, its health,
/// its metrics, this API's document, and the files iOS and Android read to trust the domain.
public enum GatewayAPI {
    /// Every one, as the API document lists them.
    public static let all: [EndpointDefinition] = [
        index.definition, icon.definition, health.definition, readiness.definition, metrics.definition,
        document.definition, appleAssociation.definition, androidAssociation.definition,
    ]

    /// `GET /`: a page of links for a browser (it asks for HTML), the same as JSON for others.
    public static let index = Endpoint<NoParameters, NoBody, GatewayIndex>(
        "GET", "/", access: .public, operation: "getIndex",
        summary: "Where things are: the API document, the console, the health checks (a page of links for a browser)",
        answers: "An index of the gateway's addresses", headers: ["Vary"])

    public static let icon = Endpoint<NoParameters, NoBody, FileAnswer>(
        "GET", "/favicon.ico", access: .public, operation: "getIcon", summary: "The site's icon, which browsers ask for",
        answers: "An SVG icon", media: ["image/svg+xml"])

    public static let health = Endpoint<NoParameters, NoBody, Health>(
        "GET", "/healthz", access: .public, operation: "getHealth", summary: "Alive: the process answers",
        answers: "Alive")

    public static let readiness = Endpoint<NoParameters, NoBody, Readiness>(
        "GET", "/readyz", access: .public, operation: "getReadiness",
        summary: "Ready: every service's database reachable and migrated", answers: "Ready (503: not, see Retry-After)",
        also: [503])

    public static let metrics = Endpoint<NoParameters, NoBody, FileAnswer>(
        "GET", "/metrics", access: .public, operation: "getMetrics", summary: "Prometheus metrics",
        answers: "The text exposition format", media: ["text/plain"])

    public static let document = Endpoint<NoParameters, NoBody, APIDocumentAnswer>(
        "GET", "/openapi.json", access: .public, operation: "getAPIDocument", summary: "This document",
        answers: "OpenAPI 3.1", headers: ["Cache-Control"])

    public static let appleAssociation = Endpoint<NoParameters, NoBody, AppleAppSiteAssociation>(
        "GET", "/.well-known/apple-app-site-association", access: .public, operation: "getAppleAppSiteAssociation",
        summary: "The apps whose universal links and passwords this domain vouches for (iOS reads it)",
        answers: "Apple's app site association", headers: ["Cache-Control"], problems: [.notFound])

    public static let androidAssociation = Endpoint<NoParameters, NoBody, [AssetLink]>(
        "GET", "/.well-known/assetlinks.json", access: .public, operation: "getAssetLinks",
        summary: "The Android apps this domain vouches for (Android reads it)", answers: "Digital asset links",
        headers: ["Cache-Control"], problems: [.notFound])
}

/// `GET /`'s answer: where things are.
public struct GatewayIndex: Codable, Sendable, Equatable {
    public var name: String
    public var api: String
    public var console: String
    public var readiness: String
    public var health: String
}

/// `GET /healthz`'s answer.
public struct Health: Codable, Sendable, Equatable {
    /// `ok`.
    public var status: String
}

/// `GET /readyz`'s answer: each check by name.
public struct Readiness: Codable, Sendable, Equatable {
    /// `ready`, or `unavailable` (with 503).
    public var status: String
    /// Each service's database and migrations, and the extra checks, by name.
    public var checks: [String: Bool]

    public init(status: String, checks: [String: Bool]) {
        self.status = status
        self.checks = checks
    }
}

/// `GET /openapi.json`'s answer: the API document (OpenAPI 3.1).
public struct APIDocumentAnswer: Sendable, Equatable {}

/// Apple's app site association file (universal links and shared web credentials).
public struct AppleAppSiteAssociation: Codable, Sendable, Equatable {
    public struct Links: Codable, Sendable, Equatable {
        public struct Detail: Codable, Sendable, Equatable {
            public var appIDs: [String]
            public var components: [[String: String]]
        }
        public var details: [Detail]
    }
    public struct Credentials: Codable, Sendable, Equatable {
        public var apps: [String]
    }
    public var applinks: Links
    public var webcredentials: Credentials
}

/// One statement of Android's digital asset links file.
public struct AssetLink: Codable, Sendable, Equatable {
    public struct Target: Codable, Sendable, Equatable {
        /// `android_app`.
        public var namespace: String
        public var packageName: String
        public var sha256CertFingerprints: [String]

        enum CodingKeys: String, CodingKey {
            case namespace, packageName = "package_name", sha256CertFingerprints = "sha256_cert_fingerprints"
        }
    }
    public var relation: [String]
    public var target: Target
}
