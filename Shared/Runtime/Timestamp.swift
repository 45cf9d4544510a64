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

    /// A moment as the team reads it in a list, in UTC to the minute: `2026-12-06 05:21 UTC`.
    public static func minute(secondsSince1970 value: Double) -> String {
        let text = iso8601(secondsSince1970: value, fractionDigits: 0)
        return String(text.prefix(10)) + " " + String(text.dropFirst(11).prefix(5)) + " UTC"
    }

    /// `2026-11-29T19:50:28.123456Z` for seconds since 1970, with `fractionDigits` (0, 3 or 6).
    /// Times outside years 0001–9999 are written as the nearest end of that range: callers
    /// validate what they accept (``parse(_:)`` does), and formatting never traps.
    public static func iso8601(secondsSince1970 value: Double, fractionDigits: Int = 3) -> String {
        let scale = fractionDigits == 6 ? 1_000_000.0 : fractionDigits == 3 ? 1000.0 : 1.0
        let bounded = value.isNaN ? 0 : min(max(value, earliest), latest)
        let total = Int64((bounded * scale).rounded(.down))
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

    /// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z, in seconds since 1970: the times
    /// that ISO 8601 without extensions and PostgreSQL's timestamps both hold.
    public static let earliest = -62_135_596_800.0
    public static let latest = 253_402_300_799.999_999

    /// What ``parse(_:_:)`` reads.
    public enum Syntax: Sendable {
        /// `2026-11-29`, `2026-11-29T10:00:00Z`, `2026-11-29T10:00:00.5Z` or with an offset
        /// (`+01:00`): what clients send.
        case iso8601
        /// PostgreSQL's ISO output, `2026-11-29 19:50:28.123456+00` (`T` also read, the offset's
        /// minutes and the fraction optional): what connections read with `DateStyle=ISO`.
        case postgres
    }

    /// Seconds since 1970 of a date-time written in `syntax`; nil for anything else, impossible
    /// dates (`2026-02-30`, `25:00`) and years outside 0001–9999 included. Nothing is
    /// normalized: what is accepted means exactly what it says.
    public static func parse(_ text: String, _ syntax: Syntax = .iso8601) -> Double? {
        var text = text
        return text.withUTF8 { parse(utf8: $0, syntax) }
    }

    /// The same from UTF-8 bytes (a database cell read in place).
    public static func parse(utf8 c: UnsafeBufferPointer<UInt8>, _ syntax: Syntax = .iso8601) -> Double? {
        func number(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= c.count else { return nil }
            var value: Int64 = 0
            for byte in c[start..<(start + count)] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        guard c.count >= 10, c[4] == UInt8(ascii: "-"), c[7] == UInt8(ascii: "-"),
            let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
            (1...9999).contains(year), (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        // Whole seconds as an integer, the fraction apart: added once, at the end, it keeps
        // the microseconds that a running sum of large doubles would blur.
        var seconds = days(year: year, month: month, day: day) * 86_400
        var fraction = 0.0
        if c.count == 10 { return syntax == .iso8601 ? Double(seconds) : nil }
        let separators: [UInt8] =
            syntax == .iso8601 ? [UInt8(ascii: "T"), UInt8(ascii: "t")] : [UInt8(ascii: " "), UInt8(ascii: "T")]
        guard c.count >= 19, separators.contains(c[10]), c[13] == UInt8(ascii: ":"),
            c[16] == UInt8(ascii: ":"), let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
            hour < 24, minute < 60, second < 60
        else { return nil }
        seconds += hour * 3600 + minute * 60 + second
        var index = 19
        if index < c.count, c[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let start = index
            while index < c.count, c[index] >= 0x30, c[index] <= 0x39 {
                fraction += Double(c[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start, index - start <= 9 else { return nil }
        }
        if index == c.count, syntax == .postgres { return Double(seconds) + fraction }
        guard index < c.count else { return nil }
        switch c[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign: Int64 = c[index] == UInt8(ascii: "+") ? 1 : -1
            guard let hours = number(index + 1, 2), hours < 24 else { return nil }
            index += 3
            var minutes: Int64 = 0
            if index < c.count, c[index] == UInt8(ascii: ":"), let given = number(index + 1, 2), given < 60 {
                minutes = given
                index += 3
            } else if syntax == .iso8601 {
                return nil
            }
            seconds -= sign * (hours * 3600 + minutes * 60)
        default:
            return nil
        }
        let value = Double(seconds) + fraction
        guard index == c.count, value >= earliest, value <= latest else { return nil }
        return value
    }

    /// Days in a month of the proleptic Gregorian calendar.
    public static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
