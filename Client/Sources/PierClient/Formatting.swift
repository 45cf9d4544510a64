import Foundation
import PierModels

extension Price {
    /// The price as the user's locale writes it in its currency: `$4.99`, `4,99 €`, `￥500`,
    /// `KWD 1.250` (the currency's own decimals, the locale's separators and symbol placement).
    public func formatted(locale: Locale = .current) -> String {
        let formatter = NumberFormatter()
        formatter.numberStyle = .currency
        formatter.locale = locale
        formatter.currencyCode = currency
        let exponent = Price.exponent(of: currency)
        formatter.minimumFractionDigits = exponent
        formatter.maximumFractionDigits = exponent
        return formatter.string(from: amount as NSDecimalNumber) ?? description
    }
}
