import PierModels

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension JSONWriter {
    // MARK: - Members with their values

    @inlinable public mutating func member(_ key: JSONKey, _ value: String) {
        member(key)
        write(value)
    }

    @inlinable public mutating func member(_ key: JSONKey, _ value: Int) {
        member(key)
        write(value)
    }

    @inlinable public mutating func member(_ key: JSONKey, _ value: Bool) {
        member(key)
        write(value)
    }

    @inlinable public mutating func member(_ key: JSONKey, _ value: Date) {
        member(key)
        write(value)
    }

    @inlinable public mutating func member(_ key: JSONKey, _ value: UUID) {
        member(key)
        write(value)
    }

    @inlinable public mutating func member(_ key: JSONKey, _ values: [String]) {
        member(key)
        write(values)
    }

    @inlinable public mutating func member<Value: JSONWritable>(_ key: JSONKey, _ value: Value) {
        member(key)
        write(value)
    }

    @inlinable public mutating func member<Value: JSONWritable>(_ key: JSONKey, _ values: [Value]) {
        member(key)
        write(values)
    }

    /// Absent optionals are left out, as ``WireEncoder`` does.
    @inlinable public mutating func member(_ key: JSONKey, ifPresent value: String?) {
        if let value { member(key, value) }
    }

    @inlinable public mutating func member(_ key: JSONKey, ifPresent value: Int?) {
        if let value { member(key, value) }
    }

    @inlinable public mutating func member(_ key: JSONKey, ifPresent value: Bool?) {
        if let value { member(key, value) }
    }

    @inlinable public mutating func member(_ key: JSONKey, ifPresent value: Date?) {
        if let value { member(key, value) }
    }

    @inlinable public mutating func member(_ key: JSONKey, ifPresent value: UUID?) {
        if let value { member(key, value) }
    }

    @inlinable public mutating func member(_ key: JSONKey, ifPresent values: [String]?) {
        if let values { member(key, values) }
    }

    /// A value of a vocabulary (a status, a category, a role): its wire spelling.
    @inlinable public mutating func member<Value: OpenVocabulary>(_ key: JSONKey, _ value: Value) {
        member(key, value.rawValue)
    }

    @inlinable public mutating func member<Value: OpenVocabulary>(_ key: JSONKey, ifPresent value: Value?) {
        if let value { member(key, value.rawValue) }
    }

    @inlinable public mutating func member<Value: JSONWritable>(_ key: JSONKey, ifPresent value: Value?) {
        if let value { member(key, value) }
    }

    @inlinable public mutating func member<Value: JSONWritable>(_ key: JSONKey, ifPresent values: [Value]?) {
        if let values { member(key, values) }
    }
}
