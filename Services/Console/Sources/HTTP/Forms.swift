import PierHTML
import PierModels

/// A form as the team member sent it and what was wrong with it: the page is drawn again with
/// every value kept and each field's message beside the field, never replaced by an error page.
struct FormState: Sendable {
    /// The values as typed, by the form's field names.
    var values: [String: String] = [:]
    /// Each refused field's message, by the form's field name.
    var messages: [String: String] = [:]
    /// What was wrong with the form as a whole (shown above it).
    var summary: String?

    init(values: [String: String] = [:]) { self.values = values }

    var isValid: Bool { messages.isEmpty && summary == nil }

    /// The field `name` refused with `message`.
    mutating func refuse(_ name: String, _ message: String) { messages[name] = message }

    /// What Pier answered, in the team's words: each invalid field's message beside the form's
    /// field it came from (`fields` maps the API's names to the form's where they differ; one
    /// the form does not show goes to the summary).
    mutating func take(_ problem: Problem?, status: Int, fields: [String: String] = [:]) {
        let shown = Set(values.keys)
        var unplaced: [String] = []
        for error in problem?.errors ?? [] {
            let root = String(error.field.prefix { $0 != "." && $0 != "[" })
            let name = fields[root] ?? root
            if shown.contains(name) {
                messages[name] = Self.sentence(error.message)
            } else {
                unplaced.append(Self.sentence(Labels.english.field(root) + " " + error.message))
            }
        }
        if messages.isEmpty || !unplaced.isEmpty {
            summary = ([Labels.english.problem(problem, status: status).message] + unplaced).joined(separator: " ")
        }
    }

    func value(_ name: String) -> String { values[name] ?? "" }

    /// The field's message, right after its input (empty when it was accepted).
    func message(_ name: String) -> HTML {
        guard let text = messages[name] else { return .empty }
        return "<span class=\"field-error\" id=\"\(name)-error\" data-error-for=\"\(name)\">\(text)</span>"
    }

    /// The attributes that tie a refused input to its message.
    func invalid(_ name: String) -> HTML {
        messages[name] == nil ? .empty : " aria-invalid=\"true\" aria-describedby=\"\(name)-error\""
    }

    /// A labelled text input with its value kept and its message beside it.
    func input(_ name: String, _ label: String, type: String = "text", extra: HTML = .empty) -> HTML {
        """
        <label>\(label) <input type="\(type)" name="\(name)" value="\(value(name))"\(invalid(name))\(extra)>\(message(name))</label>
        """
    }

    /// The summary above the form, when there is one.
    var banner: HTML {
        guard let summary else {
            return messages.isEmpty ? .empty : "<p class=\"form-error\" role=\"alert\">Check the fields marked below.</p>"
        }
        return "<p class=\"form-error\" role=\"alert\">\(summary)</p>"
    }

    /// A developer's message as a sentence: capitalised, ending with a full stop.
    static func sentence(_ text: String) -> String {
        guard let first = text.first else { return text }
        let body = first.uppercased() + text.dropFirst()
        return body.hasSuffix(".") ? body : body + "."
    }
}
