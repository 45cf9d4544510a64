/// A SQL statement whose values can only travel as bound parameters.
///
/// Built by string interpolation: every `\(value)` becomes `$1`, `$2`, … and the value is
/// bound separately, so a value can never change the statement. Identifiers and other raw SQL
/// need the explicit spelling `\(unsafeSQL: text)`.
///
/// ```swift
/// let query: PostgresQuery = "SELECT id FROM auth.users WHERE email = \(email)"
/// ```
public struct PostgresQuery: Sendable, ExpressibleByStringInterpolation {
    /// The statement text with `$n` placeholders.
    public private(set) var sql: String
    /// The bound values in text format; nil is SQL NULL.
    public private(set) var binds: [String?]

    public init(stringLiteral value: String) {
        sql = value
        binds = []
    }

    public init(stringInterpolation: StringInterpolation) {
        sql = stringInterpolation.sql
        binds = stringInterpolation.binds
    }

    /// A statement from raw text with no parameters: the caller vouches for its contents.
    public init(unsafeSQL sql: String) {
        self.sql = sql
        binds = []
    }

    /// Appends another query, renumbering its placeholders (for statements built in parts,
    /// such as optional filters).
    /// A space is put between the parts when neither side has one, so clauses never run together.
    public mutating func append(_ other: PostgresQuery) {
        var interpolation = StringInterpolation(literalCapacity: 0, interpolationCount: 0)
        let needsSpace = !(sql.last?.isWhitespace ?? true) && !(other.sql.first?.isWhitespace ?? true)
        interpolation.sql = needsSpace ? sql + " " : sql
        interpolation.binds = binds
        interpolation.appendInterpolation(other)
        sql = interpolation.sql
        binds = interpolation.binds
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var binds: [String?] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
        }

        public mutating func appendLiteral(_ literal: String) { sql += literal }

        /// Binds a value as the next `$n` parameter.
        public mutating func appendInterpolation(_ value: some PostgresEncodable) {
            binds.append(value.postgresText)
            sql += "$\(binds.count)"
        }

        /// Binds an optional value; nil is SQL NULL.
        public mutating func appendInterpolation(_ value: (some PostgresEncodable)?) {
            binds.append(value?.postgresText)
            sql += "$\(binds.count)"
        }

        /// Inserts raw SQL (identifiers, keywords). Never pass user input here.
        public mutating func appendInterpolation(unsafeSQL text: String) { sql += text }

        /// Inserts another query, renumbering its placeholders after the ones already bound.
        public mutating func appendInterpolation(_ query: PostgresQuery) {
            let offset = binds.count
            var index = query.sql.startIndex
            var output = ""
            while let dollar = query.sql[index...].firstIndex(of: "$") {
                output += query.sql[index..<dollar]
                var digitsEnd = query.sql.index(after: dollar)
                while digitsEnd < query.sql.endIndex, query.sql[digitsEnd].isASCII, query.sql[digitsEnd].isNumber {
                    digitsEnd = query.sql.index(after: digitsEnd)
                }
                if let number = Int(query.sql[query.sql.index(after: dollar)..<digitsEnd]) {
                    output += "$\(number + offset)"
                } else {
                    output += "$"
                }
                index = digitsEnd
            }
            output += query.sql[index...]
            sql += output
            binds += query.binds
        }
    }
}
