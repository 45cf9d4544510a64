import PierCrypto
import PierHTTP
import PierIdentity
import PierJSON
import PierModels
import PierPostgres
import PierRuntime
import PierService

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// `/feedback/stats` and `/feedback/export`: counts for the team, and every item as NDJSON or CSV.
struct ReportsController: Sendable {
    let database: PostgresPool

    func stats(_ context: ServiceRequestContext, _ query: FeedbackStatsQuery) async throws -> JSONResponse<FeedbackStats> {
        var errors: [Problem.FieldError] = []
        let from = try query.from.map { text throws(HTTPError) -> Date in
            guard let date = FeedbackFilter.parseDate(text) else {
                throw .invalid("from", "must be an ISO 8601 date or date-time")
            }
            return date
        }
        let to = try query.to.map { text throws(HTTPError) -> Date in
            guard let date = FeedbackFilter.parseDate(text) else { throw .invalid("to", "must be an ISO 8601 date or date-time") }
            return date
        }
        if let from, let to, from > to { errors.append(.init(field: "from", message: "must not be after to")) }
        guard errors.isEmpty else { throw HTTPError.invalid(errors) }
        // Whole days from the rollup, the rest from the items, in one statement.
        return JSONResponse(
            try await FeedbackRollup.reading(database) { try await $0.stats(from: from, to: to, moderation: query.moderation) })
    }

    /// `GET /feedback/stats/daily?days=N` (1–366, 30 by default): each UTC day of the last N,
    /// today included, and the triage backlog now.
    func daily(_ context: ServiceRequestContext, _ query: FeedbackDailyQuery) async throws -> JSONResponse<FeedbackDaily> {
        let (days, moderation) = (query.days ?? 30, query.moderation)
        let today = Int((Date().timeIntervalSince1970 / 86_400).rounded(.down))
        return JSONResponse(
            try await FeedbackRollup.reading(database) { try await $0.daily(first: today - days + 1, moderation: moderation) })
    }

    /// Streams every item matching the filters, newest first, as NDJSON or CSV, a thousand rows
    /// at a time: memory stays bounded however many rows there are.
    /// - Parameter query: the format (else what `Accept` asks for) and the list's filters.
    func export(_ request: Request, _ context: ServiceRequestContext, _ query: FeedbackExportQuery) async throws
        -> EndpointReply<FileAnswer>
    {
        let filter = try FeedbackFilter(query.filter)
        let format = query.format ?? (request.headers["Accept"]?.contains("text/csv") == true ? "csv" : "ndjson")
        let items = FeedbackItems(database)
        let headers: HTTPHeaders = [
            "Content-Type": format == "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson",
            "Content-Disposition": "attachment; filename=\"feedback.\(format)\"",
        ]
        return .file(headers: headers) { writer in
            if format == "csv" { try await writer.write(CSVExport.header) }
            var cursor: PageCursor?
            repeat {
                var chunk = [UInt8]()
                if format == "csv" {
                    let batch = try await items.batch(matching: filter, after: cursor, count: 1000)
                    for item in batch.elements { chunk += Array(CSVExport.line(item).utf8) }
                    cursor = batch.next
                } else {
                    // NDJSON straight from the rows, as the list writes them.
                    let batch = try await items.batchRows(matching: filter, after: cursor, count: 1000)
                    let (rows, next) = (batch.elements, batch.next)
                    var lines = JSONWriter(capacity: rows.count * 768)
                    if let first = rows.first {
                        let positions = try FeedbackRows.Positions(first.columns)
                        for row in rows {
                            try FeedbackRows.write(row, positions, admin: true, into: &lines)
                            lines.newline()
                        }
                    }
                    chunk = lines.bytes
                    cursor = next
                }
                try await writer.write(chunk)
            } while cursor != nil
        }
    }
}

/// CSV (RFC 4180) of feedback items. Cells that a spreadsheet would run as a formula are
/// prefixed with an apostrophe (OWASP's CSV injection guidance).
enum CSVExport {
    static let header =
        "id,createdAt,status,category,rating,platform,appVersion,build,osVersion,device,locale,message,tags,userId,name,email,moderation\r\n"

    static func line(_ item: FeedbackItem) -> String {
        let cells: [String] = [
            item.id.text(), CivilDate.iso8601(secondsSince1970: item.createdAt.timeIntervalSince1970),
            item.status.rawValue, item.category.rawValue, item.rating.map(String.init) ?? "", item.platform?.rawValue ?? "",
            item.appVersion ?? "",
            item.build ?? "", item.osVersion ?? "", item.device ?? "", item.locale ?? "", item.message,
            (item.tags ?? []).joined(separator: " "), item.userId?.text() ?? "", item.name ?? "", item.email ?? "",
            item.moderation?.rawValue ?? "",
        ]
        return cells.map(cell).joined(separator: ",") + "\r\n"
    }

    static func cell(_ value: String) -> String {
        var value = value
        if startsLikeAFormula(value) { value = "'" + value }
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// True when the first Unicode scalar that a spreadsheet does not skip is `=`, `+`, `-` or
    /// `@`, or the cell starts with a tab or carriage return. Scalars, not characters: `=`
    /// followed by a combining mark or a zero-width joiner is one character that is not "=".
    static func startsLikeAFormula(_ value: String) -> Bool {
        let scalars = value.unicodeScalars
        if let first = scalars.first, first == "\t" || first == "\r" { return true }
        let visible = scalars.first { scalar in
            !(scalar.properties.isWhitespace || scalar.properties.generalCategory == .format
                || scalar.properties.isDefaultIgnorableCodePoint)
        }
        guard let visible else { return false }
        return visible == "=" || visible == "+" || visible == "-" || visible == "@"
            || visible == "\u{FF1D}" || visible == "\u{FF0B}" || visible == "\u{FF0D}" || visible == "\u{FF20}"
    }
}

extension String {
    fileprivate func replacingOccurrences(of target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
