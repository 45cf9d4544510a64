import PierAudit
import PierEvents
import PierJSON
import PierModels
import PierPostgres
import PierRuntime
import RemoteConfigAPI
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The published versions in `remote_config.versions`, and the newest held in memory: `GET
/// /config` reads no database. A publication anywhere appends `config.published` to the event
/// log; every replica's store is woken by it (and reads again every 30 seconds regardless).
final class ConfigStore: LifecycleService {
    let lifecycleName = "remote config"
    let database: PostgresPool
    let events: PostgresListener
    let logger: Logger
    /// The newest version, and its rules made ready to judge.
    private let newest = Mutex<Held?>(nil)

    struct Held: Sendable {
        let version: ConfigVersion
        let compiled: Evaluation.Compiled

        init(_ version: ConfigVersion) {
            self.version = version
            compiled = Evaluation.Compiled(version.parameters)
        }
    }
    /// The answers of the newest version, by the rules chosen (callers with the same choices
    /// get the same bytes): encoded once, not per request.
    private let answers = Mutex<(version: Int, byChoices: [[Int]: Answer])>((-1, [:]))

    /// An encoded answer and its tag.
    struct Answer: Sendable {
        let body: [UInt8]
        let etag: String
    }

    /// The answer of `version` for callers whose rules chose `choices`.
    func answer(_ version: ConfigVersion, choices: [Int]) throws -> Answer {
        if let found = answers.withLock({ $0.version == version.version ? $0.byChoices[choices] : nil }) { return found }
        let values = Evaluation.values(version.parameters, choices: choices).values
        let body = try JSON.encode(ConfigAnswer(version: version.version, values: values))
        // The version and the choices decide the bytes: a strong tag without hashing them.
        let tag = "\"\(version.version)-" + choices.map(String.init).joined(separator: ".") + "\""
        let answer = Answer(body: body, etag: tag)
        answers.withLock { cache in
            if cache.version != version.version || cache.byChoices.count >= 4096 { cache = (version.version, [:]) }
            cache.byChoices[choices] = answer
        }
        return answer
    }

    init(database: PostgresPool, events: PostgresListener, logger: Logger) {
        (self.database, self.events, self.logger) = (database, events, logger)
    }

    /// The version apps get now (nil until the first read; a version 0 with no parameters
    /// before the first publication).
    var current: ConfigVersion? { newest.withLock { $0?.version } }

    /// The newest version with its compiled rules.
    var held: Held? { newest.withLock { $0 } }

    func start() async throws {
        do { try await reload() } catch { logger.warning("remote config not read yet", [("error", .string("\(error)"))]) }
    }

    func run() async throws {
        await events.follow(every: .seconds(30), wakingOn: [ConfigPublished.type]) {
            do { try await reload() } catch {
                logger.warning("remote config could not be read", [("error", .string("\(error)"))])
            }
        }
    }

    /// Reads the newest version into memory.
    func reload() async throws {
        let found = try await versions(limit: 1).first
        let read = found ?? ConfigVersion(version: 0, parameters: [], note: "", publishedBy: UUID(), publishedAt: Date())
        if (held?.version.version ?? -1) < read.version || held == nil {
            let ready = Held(read)
            newest.withLock { held in
                if (held?.version.version ?? -1) <= read.version { held = ready }
            }
        }
    }

    func versions(limit: Int) async throws -> [ConfigVersion] {
        try await database.query(
            """
            SELECT version, parameters::text AS parameters, note, published_by, published_at, restores
            FROM remote_config.versions ORDER BY version DESC LIMIT \(limit)
            """
        ).map(Self.version)
    }

    func version(_ number: Int) async throws -> ConfigVersion? {
        try await database.query(
            """
            SELECT version, parameters::text AS parameters, note, published_by, published_at, restores
            FROM remote_config.versions WHERE version = \(number)
            """
        ).first.map(Self.version)
    }

    static func version(_ row: PostgresRow) throws -> ConfigVersion {
        ConfigVersion(
            version: try row.decode("version"),
            parameters: try row.decode("parameters", as: PostgresJSON<[ConfigParameter]>.self).value,
            note: try row.decode("note"), publishedBy: try row.decode("published_by"),
            publishedAt: try row.decode("published_at"), restores: try row.decode("restores", as: Int?.self))
    }

    enum Published: Sendable {
        case published(ConfigVersion)
        /// Another version was published since `basedOn`: the newest's number.
        case stale(Int)
    }

    /// Publishes `parameters` as the next version, if the newest is still `basedOn`, recording
    /// which keys changed in the audit log and announcing it on the event log; in one
    /// transaction, one publication at a time.
    func publish(
        _ parameters: [ConfigParameter], basedOn: Int, note: String, restoring: Int? = nil, by actor: AuditActor
    ) async throws -> Published {
        guard let author = actor.id else { return .stale(-1) }
        let published = try await database.withTransaction { connection -> Published in
            try await connection.execute("SELECT pg_advisory_xact_lock(hashtext('remote_config.publish'))")
            let rows = try await connection.query(
                """
                SELECT version, parameters::text AS parameters, note, published_by, published_at, restores
                FROM remote_config.versions ORDER BY version DESC LIMIT 1
                """)
            let before = try rows.first.map(Self.version)
            let latest = before?.version ?? 0
            guard restoring != nil || latest == basedOn else { return .stale(latest) }
            let stored = try await connection.query(
                """
                INSERT INTO remote_config.versions (version, parameters, note, published_by, restores)
                VALUES (\(latest + 1), \(PostgresJSON(parameters))::jsonb, \(note), \(author), \(restoring))
                RETURNING published_at
                """)
            let version = ConfigVersion(
                version: latest + 1, parameters: parameters, note: note, publishedBy: author,
                publishedAt: try stored[0].decode("published_at"), restores: restoring)
            let changed = Self.changedKeys(before?.parameters ?? [], parameters)
            try await AuditLog.append(
                .init(
                    AuditAction(wire: restoring == nil ? "config.published" : "config.rolled_back"),
                    target: ("config", String(version.version)), subject: nil,
                    before: .object(["version": .number(Double(latest))]),
                    after: .object([
                        "version": .number(Double(version.version)), "changed": .array(changed.map(JSONValue.string)),
                        "note": .string(note),
                    ])),
                by: actor, schema: RemoteConfigService.schema, on: connection)
            _ = try await EventLog.append(
                ConfigPublished.type, payload: ConfigPublished(version: version.version, changed: changed), on: connection)
            return .published(version)
        }
        if case .published(let version) = published {
            let ready = Held(version)
            newest.withLock { held in if (held?.version.version ?? -1) < version.version { held = ready } }
        }
        return published
    }

    /// The keys added, removed or changed between two versions, sorted.
    static func changedKeys(_ old: [ConfigParameter], _ new: [ConfigParameter]) -> [String] {
        let before = Dictionary(old.map { ($0.key, $0) }) { first, _ in first }
        let after = Dictionary(new.map { ($0.key, $0) }) { first, _ in first }
        return Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }.sorted()
    }
}

/// The payload of `config.published`: a new version of the config (webhooks and every replica
/// hear of it).
public struct ConfigPublished: Codable, Sendable, Equatable {
    public static let type = "config.published"
    public var version: Int
    public var changed: [String]
}
