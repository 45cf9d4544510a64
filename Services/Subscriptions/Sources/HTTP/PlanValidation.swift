import PierHTTP
import PierModels
import PierRuntime

/// A plan's fields after every check, normalized for storage. Creating and updating share
/// the checks: an update is the stored plan with the changed fields applied, checked whole.
struct ValidPlan: Sendable {
    var plan: Plan

    static let maximumPrice = 1_000_000_000_000
    static let maximumEntitlements = 32
    static let maximumProducts = 32

    init(_ plan: Plan) throws(HTTPError) {
        var errors: [Problem.FieldError] = []
        func fail(_ field: String, _ message: String) { errors.append(.init(field: field, message: message)) }
        var plan = plan
        plan.name = plan.name.trimmingWhitespace()
        plan.description = plan.description.trimmingWhitespace()

        if !Self.isSlug(plan.id, maximum: 64) {
            fail("id", "must be 1 to 64 lowercase letters, digits, '-' or '_', starting with a letter or digit")
        }
        if plan.name.isEmpty || plan.name.unicodeScalars.count > 100 { fail("name", "must be 1 to 100 characters") }
        if plan.description.unicodeScalars.count > 2000 { fail("description", "must be at most 2000 characters") }
        if !(0...Self.maximumPrice).contains(plan.price) {
            fail("price", "must be an integer number of minor units between 0 and \(Self.maximumPrice)")
        }
        if plan.currency.utf8.count != 3 || !plan.currency.utf8.allSatisfy({ (65...90).contains($0) }) {
            fail("currency", "must be an ISO 4217 code of three uppercase letters, such as USD")
        }
        if !Self.isDuration(plan.billingPeriod) {
            fail("billingPeriod", "must be an ISO 8601 duration of years, months, weeks or days, such as P1M")
        }
        if let trial = plan.trialPeriod, !Self.isDuration(trial) {
            fail("trialPeriod", "must be an ISO 8601 duration such as P7D, or absent")
        }
        if plan.entitlements.isEmpty || plan.entitlements.count > Self.maximumEntitlements {
            fail("entitlements", "must hold 1 to \(Self.maximumEntitlements) keys")
        }
        for (index, key) in plan.entitlements.enumerated() where !Self.isSlug(key, maximum: 64, extra: ".") {
            fail("entitlements[\(index)]", "must be 1 to 64 lowercase letters, digits, '-', '_' or '.'")
        }
        if Set(plan.entitlements).count != plan.entitlements.count { fail("entitlements", "must not repeat a key") }
        if plan.appStoreProductIds.count > Self.maximumProducts {
            fail("appStoreProductIds", "must hold at most \(Self.maximumProducts) product ids")
        }
        for (index, product) in plan.appStoreProductIds.enumerated()
        where product.isEmpty || product.utf8.count > 200 || !product.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            fail("appStoreProductIds[\(index)]", "must be 1 to 200 visible ASCII characters")
        }
        if Set(plan.appStoreProductIds).count != plan.appStoreProductIds.count {
            fail("appStoreProductIds", "must not repeat a product id")
        }
        if plan.googleProductIds.count > Self.maximumProducts {
            fail("googleProductIds", "must hold at most \(Self.maximumProducts) product ids")
        }
        for (index, product) in plan.googleProductIds.enumerated() where !Self.isGoogleProduct(product) {
            fail(
                "googleProductIds[\(index)]",
                "must be a Google Play product id (lowercase letters, digits, '_' and '.') or productId:basePlanId")
        }
        if Set(plan.googleProductIds).count != plan.googleProductIds.count {
            fail("googleProductIds", "must not repeat a product id")
        }
        guard errors.isEmpty else { throw .invalid(errors) }
        plan.entitlements.sort()
        self.plan = plan
    }

    init(creating body: CreatePlan) throws(HTTPError) {
        try self.init(
            Plan(
                id: body.id, name: body.name, description: body.description ?? "", price: body.price, currency: body.currency,
                billingPeriod: body.billingPeriod, trialPeriod: body.trialPeriod, entitlements: body.entitlements,
                appStoreProductIds: body.appStoreProductIds ?? [], googleProductIds: body.googleProductIds ?? [],
                active: body.active ?? true))
    }

    init(updating stored: Plan, with body: UpdatePlan) throws(HTTPError) {
        var plan = stored
        if let name = body.name { plan.name = name }
        if let description = body.description { plan.description = description }
        if let price = body.price { plan.price = price }
        if let currency = body.currency { plan.currency = currency }
        if let period = body.billingPeriod { plan.billingPeriod = period }
        if let trial = body.trialPeriod { plan.trialPeriod = trial.isEmpty ? nil : trial }
        if let entitlements = body.entitlements { plan.entitlements = entitlements }
        if let products = body.appStoreProductIds { plan.appStoreProductIds = products }
        if let products = body.googleProductIds { plan.googleProductIds = products }
        if let active = body.active { plan.active = active }
        try self.init(plan)
    }

    /// Google Play's ids: a product id (a lowercase letter or digit first, then lowercase
    /// letters, digits, `_` and `.`, at most 40), optionally `:` and a base plan id (lowercase
    /// letters, digits and `-`, at most 63).
    static func isGoogleProduct(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let product = parts.first, (1...40).contains(product.count),
            product.first.map({ $0.isASCII && ($0.isLowercase || $0.isNumber) }) == true,
            product.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_" || $0 == ".") })
        else { return false }
        guard parts.count == 2 else { return true }
        return (1...63).contains(parts[1].count)
            && parts[1].allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }
    }

    static func isSlug(_ text: String, maximum: Int, extra: Character? = nil) -> Bool {
        guard let first = text.first, first.isASCII, first.isLetter || first.isNumber, text.count <= maximum else {
            return false
        }
        return text.allSatisfy { character in
            character.isASCII
                && (character.isLowercase || character.isNumber || character == "-" || character == "_"
                    || character == extra)
        }
    }

    /// `P` then one or more of `nY`, `nM`, `nW`, `nD` in that order, each number 1 to 999 and
    /// at least one not zero (the forms PostgreSQL's interval input and StoreKit both use).
    static func isDuration(_ text: String) -> Bool {
        var rest = Substring(text)
        guard rest.popFirst() == "P", !rest.isEmpty else { return false }
        var units: [Character] = ["Y", "M", "W", "D"]
        var total = 0
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 3, let number = Int(digits) else { return false }
            rest = rest.dropFirst(digits.count)
            guard let unit = rest.popFirst(), let position = units.firstIndex(of: unit) else { return false }
            units.removeFirst(position + 1)
            total += number
        }
        return total > 0
    }
}
