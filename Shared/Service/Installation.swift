import PierHTTP

extension Request {
    /// The `X-Installation-ID` header the client library sends (one per app install), or nil
    /// without one; anything but 1 to 128 visible ASCII characters is a 422 naming the header.
    public func installationID() throws(HTTPError) -> String? {
        guard let installation = headers["X-Installation-ID"] else { return nil }
        guard !installation.isEmpty, installation.utf8.count <= 128, installation.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { throw .invalid("X-Installation-ID", "must be 1 to 128 visible ASCII characters") }
        return installation
    }
}
