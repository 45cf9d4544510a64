import PierHTTP
import PierPostgres

/// How errors of the shared layers reach clients: the database being away is a 503 with
/// `Retry-After` (the client may retry), a schema that is not migrated a 503
/// `schema_not_migrated`, a unique violation that a handler did not map is a 409;
/// database text never leaves the server.
public enum ErrorMapping {
    public static func map(_ error: any Error) -> (any HTTPResponseError)? {
        guard let error = error as? PostgresError else { return nil }
        if error.kind == .poolTimeout {
            return HTTPError.unavailable(retryAfter: 1, "The service is busy; try again shortly.")
        }
        if error.isTransient || error.isQueryCanceled {
            return HTTPError.unavailable(retryAfter: 2, "The database is unavailable; try again shortly.")
        }
        if error.isMissingSchemaObject {
            return HTTPError(
                503, code: .schemaNotMigrated,
                detail:
                    "The database schema is not migrated: run the service's migrate command (pier-<service> migrate), or start it with --migrate.",
                headers: ["Retry-After": "10"])
        }
        if error.isUniqueViolation {
            return HTTPError.conflict("This conflicts with an existing resource.")
        }
        return nil
    }
}
