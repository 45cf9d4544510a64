import PierHTTP
import PierPostgres

/// How errors of the shared layers reach clients: the database being away is a 503 with
/// `Retry-After` (the client may retry), a unique violation that a handler did not map is a 409;
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
        if error.isUniqueViolation {
            return HTTPError.conflict("This conflicts with an existing resource.")
        }
        return nil
    }
}
