/// Full-text search as people type: what they typed, as a `to_tsquery` text.
public enum PostgresTextSearch {
    /// The typed words as prefixes (`Crashes, pay` → `crashes:* & pay:*`): letters and digits
    /// only, so nothing of `to_tsquery`'s syntax passes; at most 8 words; a one-letter word is
    /// matched whole (a one-letter prefix would read most of an index). Nil when no word is left.
    public static func prefixQuery(_ typed: String) -> String? {
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
        guard !words.isEmpty else { return nil }
        return words.prefix(8).map { $0.count > 1 ? $0 + ":*" : $0 }.joined(separator: " & ")
    }
}
