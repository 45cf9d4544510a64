import PierRuntime

/// Reads configuration from environment variables, failing with the variable's name.
public struct Environment: Sendable {
    public let values: [String: String]

    public init(_ values: [String: String]) { self.values = values }

    /// The process environment.
    public static var process: Environment {
        var values: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                values[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return Environment(values)
    }

    /// A missing or malformed variable, named.
    public struct Failure: Error, CustomStringConvertible {
        public let variable: String
        public let problem: String
        public var description: String { "\(variable): \(problem)" }
        public init(variable: String, problem: String) {
            self.variable = variable
            self.problem = problem
        }
    }

    public func string(_ name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    public func string(_ name: String, default value: String) -> String { string(name) ?? value }

    public func required(_ name: String) throws(Failure) -> String {
        guard let value = string(name) else { throw Failure(variable: name, problem: "is required") }
        return value
    }

    public func int(_ name: String, default value: Int, in range: ClosedRange<Int> = 0...Int.max) throws(Failure) -> Int {
        try optionalInt(name, in: range) ?? value
    }

    /// The integer `name` holds, or nil when it is unset.
    public func optionalInt(_ name: String, in range: ClosedRange<Int> = 0...Int.max) throws(Failure) -> Int? {
        guard let text = string(name) else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw Failure(
                variable: name, problem: "must be an integer in \(range.lowerBound)...\(range.upperBound), got \"\(text)\"")
        }
        return number
    }

    public func bool(_ name: String, default value: Bool) throws(Failure) -> Bool {
        guard let text = string(name) else { return value }
        switch text.lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw Failure(variable: name, problem: "must be true or false, got \"\(text)\"")
        }
    }

    /// One of a fixed set of words (`off`, `soft`, `hard`), case-insensitive.
    public func choice<Choice: RawRepresentable & CaseIterable>(_ name: String, default value: Choice) throws(Failure) -> Choice
    where Choice.RawValue == String {
        guard let text = string(name) else { return value }
        guard let choice = Choice(rawValue: text.lowercased()) else {
            let words = Choice.allCases.map(\.rawValue).joined(separator: ", ")
            throw Failure(variable: name, problem: "must be one of \(words), got \"\(text)\"")
        }
        return choice
    }

    public func list(_ name: String) -> [String] {
        (string(name) ?? "").split(separator: ",").map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
    }
}

#if canImport(Glibc)
    import Glibc
#endif
