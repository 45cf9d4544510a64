import PierModels

/// Password rules after NIST SP 800-63B §5.1.1.2: a minimum length (8 by default), at most 128
/// characters, any Unicode, no composition rules, and no password from a list of common ones.
///
/// The list is the 30,000 most common passwords of the `zxcvbn` project's frequency lists
/// (PyPI package `zxcvbn` 4.5.0, `FREQUENCY_LISTS["passwords"]`), keeping those of 8 or more
/// characters since shorter ones are refused anyway: `Services/Auth/common-passwords.txt`.
struct PasswordPolicy: Sendable {
    let minimumLength: Int
    static let maximumLength = 128
    var maximumLength: Int { Self.maximumLength }

    static let common: Set<String> = {
        let text = String(decoding: PackageResources.common_passwords_txt, as: UTF8.self)
        return Set(text.split(separator: "\n").map { String($0) })
    }()

    /// `weak_password` when the password is the only field refused, else `validation_failed`:
    /// a client can show its password hint on the code alone.
    static func code(of errors: [Problem.FieldError]) -> ProblemCode {
        errors.allSatisfy { $0.field == "password" } ? .weakPassword : .validationFailed
    }

    /// The problems with `password` for field `field`; empty when it is acceptable.
    func problems(_ password: String, field: String, email: String?) -> [Problem.FieldError] {
        let length = password.count
        if length < minimumLength {
            return [Problem.FieldError(field: field, message: "must be at least \(minimumLength) characters")]
        }
        if length > maximumLength {
            return [Problem.FieldError(field: field, message: "must be at most \(maximumLength) characters")]
        }
        let lowered = password.lowercased()
        if PasswordPolicy.common.contains(lowered) {
            return [Problem.FieldError(field: field, message: "is one of the most common passwords; choose another")]
        }
        if let email, lowered == email.lowercased() || lowered == email.lowercased().split(separator: "@").first.map(String.init)
        {
            return [Problem.FieldError(field: field, message: "must not be your email address")]
        }
        return []
    }
}
