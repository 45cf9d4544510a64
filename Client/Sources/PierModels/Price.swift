#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// An amount of money in a currency's minor units, with the currency's own number of decimals
/// (ISO 4217: JPY 0, USD 2, KWD 3): `amount` is what a person reads, never `minorUnits / 100`.
/// PierClient formats it for the user's locale (`formatted(locale:)`).
public struct Price: Sendable, Hashable, CustomStringConvertible {
    /// In the currency's minor units (cents for USD, yen for JPY, fils for KWD).
    public let minorUnits: Int
    /// ISO 4217, uppercase.
    public let currency: String

    public init(minorUnits: Int, currency: String) {
        self.minorUnits = minorUnits
        self.currency = currency.uppercased()
    }

    /// The largest amount Pier holds, in minor units (ten billion dollars in cents): a plan's
    /// price, a store's, anything beyond is refused rather than computed with.
    public static let maximumMinorUnits = 1_000_000_000_000

    /// From Apple's milliunits (4990 is 4.99 in any currency), rounded to the currency's minor
    /// units; nil beyond ``maximumMinorUnits`` either way.
    public init?(milliunits: Int, currency: String) {
        guard milliunits.magnitude <= UInt(Self.maximumMinorUnits) * 1000 else { return nil }
        let scaled = milliunits * Self.minorUnitsPerUnit(of: currency)
        // Halves away from zero, in integers.
        self.init(minorUnits: (scaled + (scaled < 0 ? -500 : 500)) / 1000, currency: currency)
    }

    /// A price as a person types it in the console, in the currency's own decimals: digits, and
    /// a point before at most as many decimals as the currency has ("59.99" and "59.9" USD are
    /// 5999 and 5990 cents, "500" JPY is 500 yen, "1.250" KWD is 1250 fils); a currency symbol
    /// or code around it is ignored. Nil for anything else, so that nothing is guessed: a comma
    /// or a space ("2,49", "1.234,56", "1,000"), more decimals than the currency has ("2.495"
    /// USD, "5.5" JPY), a sign, an exponent, letters, or more than a billion units.
    public init?(typed text: String, currency: String) {
        let exponent = Self.exponent(of: currency)
        // The currency's code or symbol around the amount, and the spaces beside them; none inside.
        var kept = Substring(text.uppercased().replacing(currency.uppercased(), with: "").filter { !"$€£¥₩₹".contains($0) })
        while kept.first?.isWhitespace == true { kept.removeFirst() }
        while kept.last?.isWhitespace == true { kept.removeLast() }
        let parts = kept.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = parts.first, !whole.isEmpty, whole.count <= 9,
            whole.allSatisfy({ $0.isASCII && $0.isNumber })
        else { return nil }
        let fraction = parts.count == 2 ? parts[1] : ""
        guard fraction.count <= exponent, parts.count == 1 || !fraction.isEmpty,
            fraction.allSatisfy({ $0.isASCII && $0.isNumber }), let units = Int(whole),
            let minor = exponent == 0 ? 0 : Int(fraction + String(repeating: "0", count: exponent - fraction.count))
        else { return nil }
        self.init(minorUnits: units * Self.minorUnitsPerUnit(of: currency) + minor, currency: currency)
    }

    /// The amount in whole units of the currency: 4.99 for 499 USD cents, 500 for 500 yen.
    public var amount: Decimal { Decimal(minorUnits) / Decimal(Self.minorUnitsPerUnit(of: currency)) }

    /// How many decimals the currency's minor unit has (ISO 4217); 2 for a code not listed.
    public static func exponent(of currency: String) -> Int {
        let code = currency.uppercased()
        if zeroDecimals.contains(code) { return 0 }
        if threeDecimals.contains(code) { return 3 }
        if code == "CLF" || code == "UYW" { return 4 }
        return 2
    }

    /// `4.99 USD`, `500 JPY`, `1.250 KWD`: the currency's own decimals, for logs, tools and the
    /// console; apps show `formatted(locale:)`.
    public var description: String {
        let exponent = Self.exponent(of: currency)
        let magnitude = minorUnits.magnitude
        let unit = UInt(Self.minorUnitsPerUnit(of: currency))
        var text = (minorUnits < 0 ? "-" : "") + String(magnitude / unit)
        if exponent > 0 {
            let fraction = String(magnitude % unit)
            text += "." + String(repeating: "0", count: exponent - fraction.count) + fraction
        }
        return text + " " + currency
    }

    private static let zeroDecimals: Set<String> = [
        "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF",
    ]
    private static let threeDecimals: Set<String> = ["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"]

    /// 10 to the currency's exponent: 100 cents in a dollar, 1 yen in a yen, 1000 fils in a dinar.
    public static func minorUnitsPerUnit(of currency: String) -> Int {
        (0..<exponent(of: currency)).reduce(1) { result, _ in result * 10 }
    }
}

/// A billing or trial period, read from its ISO 8601 duration (`P1W`, `P1M`, `P3M`, `P1Y`,
/// `P7D`). A form this version cannot read keeps its text and has no unit.
public struct BillingPeriod: Sendable, Hashable, CustomStringConvertible {
    public enum Unit: String, Sendable, Hashable { case day, week, month, year }

    /// How many units (`3` in `P3M`).
    public let count: Int
    /// Nil for a duration this version cannot read.
    public let unit: Unit?
    /// The duration as the server sent it.
    public let iso8601: String

    public init(iso8601: String) {
        self.iso8601 = iso8601
        let units: [Character: Unit] = ["D": .day, "W": .week, "M": .month, "Y": .year]
        if iso8601.count >= 3, iso8601.first == "P", let last = iso8601.last, let unit = units[last],
            let count = Int(iso8601.dropFirst().dropLast()), count > 0
        {
            (self.count, self.unit) = (count, unit)
        } else {
            (self.count, self.unit) = (0, nil)
        }
    }

    public var description: String { iso8601 }
}

extension Plan {
    /// The price with its currency's decimals (``Price``).
    public var amount: Price { Price(minorUnits: price, currency: currency) }
    public var period: BillingPeriod { BillingPeriod(iso8601: billingPeriod) }
    public var trial: BillingPeriod? { trialPeriod.map(BillingPeriod.init(iso8601:)) }
}

extension SubscriptionStatus {
    /// What the user paid for the deciding purchase (``price`` is in the currency's minor units,
    /// whichever store sold it).
    public var paid: Price? {
        guard let price, let currency else { return nil }
        return Price(minorUnits: price, currency: currency)
    }
}
