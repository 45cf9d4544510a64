/// Calendar arithmetic for UTC timestamps without Foundation's calendars (and without ICU):
/// Howard Hinnant's civil-date algorithms, proleptic Gregorian, days counted from 1970-01-01.
public enum CivilDate {
    /// Days since 1970-01-01 of a year, month (1–12) and day (1–31).
    public static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The year, month and day of a day count since 1970-01-01.
    public static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// `2026-11-29T19:50:28.123456Z` for seconds since 1970, with `fractionDigits` (0, 3 or 6).
    public static func iso8601(secondsSince1970 value: Double, fractionDigits: Int = 3) -> String {
        let scale = fractionDigits == 6 ? 1_000_000.0 : fractionDigits == 3 ? 1000.0 : 1.0
        let total = Int64((value * scale).rounded(.down))
        let unit = Int64(scale)
        var seconds = total >= 0 ? total / unit : (total - unit + 1) / unit
        let fraction = total - seconds * unit
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        seconds -= days * 86_400
        let (year, month, day) = civil(days: days)
        var text =
            pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T" + pad(seconds / 3600, 2) + ":"
            + pad(seconds / 60 % 60, 2) + ":" + pad(seconds % 60, 2)
        if fractionDigits > 0 { text += "." + pad(fraction, fractionDigits) }
        return text + "Z"
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
