/// Header fields in arrival order; names compare case-insensitively.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}
    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The first value of `name`, if any.
    public subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Every value of `name`.
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// A list field as one value: its lines joined with ", " in order, as RFC 9110 §5.3 says
    /// repeated lines mean (`X-Forwarded-For`, `Forwarded`); nil when absent.
    public func list(_ name: String) -> String? {
        let all = values(name)
        return all.isEmpty ? nil : all.joined(separator: ", ")
    }

    /// Appends a field (a name may repeat).
    public mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }

    /// Replaces every field of `name` with one.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name, value))
    }

    public mutating func remove(_ name: String) { fields.removeAll { $0.name.caseInsensitiveEquals(name) } }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }
}

extension String {
    /// ASCII case-insensitive equality, enough for header names and tokens.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) where x != y {
            let lx = x >= 65 && x <= 90 ? x + 32 : x
            let ly = y >= 65 && y <= 90 ? y + 32 : y
            if lx != ly { return false }
        }
        return true
    }
}
