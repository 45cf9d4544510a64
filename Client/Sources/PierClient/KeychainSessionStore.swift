// Compiled on Apple platforms only (the Security framework); nothing on Linux builds or tests
// this file. Kept to the four Keychain calls a session needs; device tokens are a second item
// of the same service (`<account>.devices`), kept across sign-outs; the last subscription
// status a third (`<account>.status`), cleared with the session.
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

        private var query: [String: Any] { query(account) }

        /// The item of `name`: the session's (`account`), or the device tokens' (`account.devices`).
        private func query(_ name: String) -> [String: Any] {
            var query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                kSecAttrAccount as String: name,
            ]
            if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
            return query
        }

        public func load() throws -> Session? {
            guard let data = try read(account) else { return nil }
            return try Transport.decoder.decode(Session.self, from: data)
        }

        public func save(_ session: Session) throws { try write(try Transport.encoder.encode(session), to: account) }

        public func deviceToken(for email: String) -> String? { devices().tokens[email] }

        public func saveDeviceToken(_ token: String, for email: String) {
            var list = devices()
            list.set(token, for: email)
            if let data = try? Transport.encoder.encode(list) { try? write(data, to: account + ".devices") }
        }

        public func loadStatus() -> Data? { (try? read(account + ".status")) ?? nil }
        public func saveStatus(_ status: Data) { try? write(status, to: account + ".status") }

        private func devices() -> DeviceTokenList {
            ((try? read(account + ".devices")) ?? nil).flatMap { try? Transport.decoder.decode(DeviceTokenList.self, from: $0) }
                ?? DeviceTokenList()
        }

        private func read(_ name: String) throws -> Data? {
            var search = query(name)
            search[kSecReturnData as String] = true
            search[kSecMatchLimit as String] = kSecMatchLimitOne
            var item: CFTypeRef?
            let status = SecItemCopyMatching(search as CFDictionary, &item)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess, let data = item as? Data else {
                // errSecInteractionNotAllowed before first unlock: an error, never "signed out".
                throw NSError(domain: NSOSStatusErrorDomain, code: Int(status))
            }
            return data
        }

        private func write(_ data: Data, to name: String) throws {
            let update: [String: Any] = [
                kSecValueData as String: data,
                kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
            ]
            var status = SecItemUpdate(query(name) as CFDictionary, update as CFDictionary)
            if status == errSecItemNotFound {
                status = SecItemAdd(query(name).merging(update) { $1 } as CFDictionary, nil)
            }
            guard status == errSecSuccess else { throw NSError(domain: NSOSStatusErrorDomain, code: Int(status)) }
        }

        public func clear() throws {
            _ = SecItemDelete(query(account + ".status") as CFDictionary)
            let status = SecItemDelete(query as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else {
                throw NSError(domain: NSOSStatusErrorDomain, code: Int(status))
            }
        }
    }
#endif
