import CPostgres

/// One row of a result, in text format, with its column names. Its cells live in the result's
/// one buffer (``PostgresCells``): decoding reads them in place.
public struct PostgresRow: Sendable {
    /// The column names, shared by every row of a result.
    public let columns: PostgresColumns
    @usableFromInline let cells: PostgresCells
    /// This row's first cell in `cells`.
    @usableFromInline let first: Int

    init(columns: PostgresColumns, cells: PostgresCells, row: Int) {
        self.columns = columns
        self.cells = cells
        self.first = row * columns.names.count
    }

    /// The values as text; nil is SQL NULL.
    public var values: [String?] {
        (0..<columns.names.count).map { column in
            cells.withCell(first + column) { $0.map { String(decoding: $0, as: UTF8.self) } }
        }
    }

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
        guard let index = columns.position(of: name) else {
            throw PostgresError(.decoding, message: "no column \(name) in the result")
        }
        return try cells.withCell(first + index) { bytes throws -> T? in
            guard let bytes else { return nil }
            guard let value = T(postgresBytes: bytes) else {
                throw PostgresError(.decoding, message: "column \(name) is not a valid \(T.self)")
            }
            return value
        }
    }

    /// Runs `body` with the text of the column at `index` as the server sent it (nil for NULL),
    /// read in place: for bytes that go out again as they are (a JSON answer written from rows).
    @inlinable
    public func withBytes<R>(column index: Int, _ body: (UnsafeBufferPointer<UInt8>?) throws -> R) rethrows -> R {
        precondition(index < columns.names.count, "no column \(index)")
        return try cells.withCell(first + index, body)
    }

    /// Decodes the column at `index` as `T`.
    @inlinable
    public func decode<T: PostgresDecodable>(column index: Int, as type: T.Type = T.self) throws -> T {
        guard index < columns.names.count else { throw PostgresError(.decoding, message: "no column \(index)") }
        return try cells.withCell(first + index) { bytes throws -> T in
            guard let bytes, let value = T(postgresBytes: bytes) else {
                throw PostgresError(.decoding, message: "column \(index) is NULL or not a valid \(T.self)")
            }
            return value
        }
    }
}

/// Every cell of a result, read in place from libpq's result, which lives as long as one of its
/// rows does (no String, no copy per cell).
///
/// `@unchecked Sendable`: a `PGresult` is read-only once made, and libpq lets any thread read
/// it; it is cleared once, when the last row lets go.
public final class PostgresCells: @unchecked Sendable {
    @usableFromInline let result: OpaquePointer
    @usableFromInline let columnCount: Int

    init(result: OpaquePointer, columnCount: Int) {
        self.result = result
        self.columnCount = columnCount
    }

    deinit { PQclear(result) }

    /// Runs `body` with cell `index`'s bytes (nil for NULL), counted row by row.
    @inlinable
    func withCell<R>(_ index: Int, _ body: (UnsafeBufferPointer<UInt8>?) throws -> R) rethrows -> R {
        let (row, column) = index.quotientAndRemainder(dividingBy: columnCount)
        let (r, c) = (Int32(row), Int32(column))
        guard PQgetisnull(result, r, c) == 0 else { return try body(nil) }
        let length = Int(PQgetlength(result, r, c))
        return try PQgetvalue(result, r, c).withMemoryRebound(to: UInt8.self, capacity: length) {
            try body(UnsafeBufferPointer(start: $0, count: length))
        }
    }
}

/// The column names of a result, with an index for lookup by name.
public final class PostgresColumns: Sendable {
    public let names: [String]
    /// By name, for results with many columns; nil for the usual few, which are searched in
    /// order (most names are short enough to compare as one word: faster than hashing them).
    @usableFromInline let index: [String: Int]?

    init(_ names: [String]) {
        self.names = names
        if names.count > 32 {
            var index: [String: Int] = [:]
            for (position, name) in names.enumerated() where index[name] == nil { index[name] = position }
            self.index = index
        } else {
            index = nil
        }
    }

    /// The first column called `name`: look it up once per result, then read each row by
    /// position.
    @inlinable public func position(of name: String) -> Int? {
        if let index { return index[name] }
        return names.firstIndex(of: name)
    }
}

/// A type read from one row, by the one conformance that names its columns: it sits next to the
/// select list those names come from (a repository's `columns`), so that a column renamed in
/// one is seen renamed in the other, and callers read `rows.decode(User.self)`, never a column.
public protocol PostgresRowDecodable: Sendable {
    init(row: PostgresRow) throws
}

extension PostgresRow {
    /// The row as `T`.
    public func decode<T: PostgresRowDecodable>(_ type: T.Type) throws -> T { try T(row: self) }
}

extension Array where Element == PostgresRow {
    /// Each row as `T`.
    public func decode<T: PostgresRowDecodable>(_ type: T.Type) throws -> [T] { try map(T.init(row:)) }
}
