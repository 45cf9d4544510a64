/// One row of a result, in text format, with its column names.
public struct PostgresRow: Sendable {
    /// The column names, shared by every row of a result.
    public let columns: PostgresColumns
    /// The values; nil is SQL NULL.
    public let values: [String?]

    /// Decodes column `name` as `T`. Inlinable, so that each caller's module specializes it for
    /// its types (measured: unspecialized, generic metadata lookups were a tenth of a 100-row
    /// list's time).
    /// - Throws: a `.decoding` ``PostgresError`` when the column is missing, NULL or not a `T`.
    @inlinable
    public func decode<T: PostgresDecodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        guard let value = try decode(name, as: T?.self) else {
            throw PostgresError(.decoding, message: "column \(name) is NULL, expected \(T.self)")
        }
        return value
    }

    /// Decodes column `name` as an optional `T`: NULL is nil.
    @inlinable
    public func decode<T: PostgresDecodable>(_ name: String, as type: T?.Type = T?.self) throws -> T? {
        guard let index = columns.index[name] else {
            throw PostgresError(.decoding, message: "no column \(name) in the result")
        }
        guard let text = values[index] else { return nil }
        guard let value = T(postgresText: text) else {
            throw PostgresError(.decoding, message: "column \(name) is not a valid \(T.self)")
        }
        return value
    }

    /// Decodes the column at `index` as `T`.
    @inlinable
    public func decode<T: PostgresDecodable>(column index: Int, as type: T.Type = T.self) throws -> T {
        guard index < values.count else { throw PostgresError(.decoding, message: "no column \(index)") }
        guard let text = values[index], let value = T(postgresText: text) else {
            throw PostgresError(.decoding, message: "column \(index) is NULL or not a valid \(T.self)")
        }
        return value
    }
}

/// The column names of a result, with an index for lookup by name.
public final class PostgresColumns: Sendable {
    public let names: [String]
    @usableFromInline let index: [String: Int]

    init(_ names: [String]) {
        self.names = names
        var index: [String: Int] = [:]
        for (position, name) in names.enumerated() where index[name] == nil { index[name] = position }
        self.index = index
    }
}
