import PierModels
import PierService

/// Names people give — a display name, a device name, the full name Apple passes on — land in
/// mails, pages and lists that other people read. Each is trimmed and refused (naming its field)
/// when longer than 100 characters or when it holds a control character (CR/LF would forge lines
/// of a mail), a bidirectional control (it reorders what the reader sees: "Anna's iPhone" that
/// reads backwards) or markup (`<`, `>`).
enum Names {
    static let maximumLength = 100

    /// `name` trimmed (empty when only blanks), or nil when absent; a problem appended when refused.
    static func clean(_ name: String?, field: String, into errors: inout [Problem.FieldError]) -> String? {
        guard let name = name?.trimmingWhitespace() else { return nil }
        if name.count > maximumLength {
            errors.append(.init(field: field, message: "must be at most \(maximumLength) characters"))
        } else if let why = refusal(name) {
            errors.append(.init(field: field, message: why))
        }
        return name
    }

    static func refusal(_ name: String) -> String? {
        for scalar in name.unicodeScalars {
            if scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .lineSeparator
                || scalar.properties.generalCategory == .paragraphSeparator
            {
                return "must not contain control characters or line breaks"
            }
            if isBidirectionalControl(scalar) { return "must not contain bidirectional control characters" }
            if scalar == "<" || scalar == ">" { return "must not contain < or >" }
        }
        return nil
    }

    /// LRM, RLM, ALM and the embeddings, overrides and isolates (Unicode's Bidi_Control property).
    static func isBidirectionalControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
