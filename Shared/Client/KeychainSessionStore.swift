// Compiled on Apple platforms only (the Security framework); nothing on Linux builds or tests
// this file. Kept to the four Keychain calls a session needs.
#if canImport(Security)
    import Foundation
    import Security

    /// Keeps the session in the Keychain as one generic password item. Give an `accessGroup`
    /// (an app group) to share the session between an app and its extensions.
    public final class KeychainSessionStore: SessionStore {
        public let service: String
        public let account: String
        public let accessGroup: String?

        public init(service: String = "pier.session", account: String = "default", accessGroup: String? = nil) {
            self.service = service
            self.account = account
            self.accessGroup = accessGroup
        }

        private var query: [String: Any] {
            var query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                kSecAttrAccount as String: account,
            ]
            if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
            return query
        }

        public func load() throws -> Session? {
            var search = query
            search[kSecReturnData as String] = true
            search[kSecMatchLimit as String] = kSecMatchLimitOne
            var item: CFTypeRef?
            let status = SecItemCopyMatching(search as CFDictionary, &item)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess, let data = item as? Data else {
                // errSecInteractionNotAllowed before first unlock: an error, never "signed out".
                throw NSError(domain: NSOSStatusErrorDomain, code: Int(status))
            }
            return try Transport.decoder.decode(Session.self, from: data)
        }

        public func save(_ session: Session) throws {
            let data = try Transport.encoder.encode(session)
            let update: [String: Any] = [
                kSecValueData as String: data,
                kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
            ]
            var status = SecItemUpdate(query as CFDictionary, update as CFDictionary)
            if status == errSecItemNotFound {
                status = SecItemAdd(query.merging(update) { $1 } as CFDictionary, nil)
            }
            guard status == errSecSuccess else { throw NSError(domain: NSOSStatusErrorDomain, code: Int(status)) }
        }

        public func clear() throws {
            let status = SecItemDelete(query as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else {
                throw NSError(domain: NSOSStatusErrorDomain, code: Int(status))
            }
        }
    }
#endif
