/// Full-text search as people type: what they typed, as words and as a `to_tsquery` text.
public enum PostgresTextSearch {
    /// The typed words, lowercased: letters and digits only, so nothing of `to_tsquery`'s syntax
    /// passes; at most 8. Nil when none is left.
    public static func words(_ typed: String) -> [String]? {
        var words: [String] = []
        var word = ""
        for character in typed.lowercased() + " " {
            if character.isLetter || character.isNumber {
                word.append(character)
            } else if !word.isEmpty {
                words.append(word)
                word = ""
            }
        }
        return words.isEmpty ? nil : Array(words.prefix(8))
    }

    /// The typed words as prefixes for `to_tsquery` with a stemming configuration
    /// (`Crashes, pay` → `crashes:* & pay:*`); a one-letter word is matched whole (a one-letter
    /// prefix would read most of an index).
    public static func prefixQuery(_ typed: String) -> String? {
        words(typed)?.map { $0.count > 1 ? $0 + ":*" : $0 }.joined(separator: " & ")
    }

    /// The SQL of a `tsquery` of `words` taken as lexemes, each a prefix (one letter matched
    /// whole), none parsed again: `to_tsquery` would split a word its parser reads otherwise
    /// standing alone than inside a text (`9e9e9e9e` becomes a number and a word), and find
    /// nothing. `normalize` is applied to the query's text in SQL (an unaccent function), or
    /// nothing. One bind parameter, which the planner reads when it chooses an index (a subquery
    /// would hide the words from it).
    public static func lexemes(_ words: [String], normalize: String? = nil) -> PostgresQuery {
        // Letters and digits only (``words(_:)``): quoted, they are lexemes and nothing else.
        let text = words.map { "'" + $0.filter { $0.isLetter || $0.isNumber } + "'" + ($0.count > 1 ? ":*" : "") }
            .joined(separator: " & ")
        guard let normalize else { return "\(text)::tsquery" }
        var query = PostgresQuery(unsafeSQL: normalize + "(")
        query.append("\(text))::tsquery")
        return query
    }
}
