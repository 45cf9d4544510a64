import PierCrypto
import PierHTTP
import PierRuntime

extension Response {
    /// A JSON answer with a strong `ETag` (a digest of the body): a request whose
    /// `If-None-Match` names it (or `*`) gets 304 with the same headers and no body, so a client
    /// checking on every launch moves no body while nothing changed.
    public static func conditionalJSON(_ body: [UInt8], for request: Request, headers: HTTPHeaders) -> Response {
        let tag = "\"" + hexString(SHA256.hash(body).prefix(16)) + "\""
        var headers = headers
        headers.set("ETag", tag)
        if let match = request.headers["If-None-Match"],
            match.split(separator: ",").contains(where: { $0.trimmingWhitespace() == tag || $0.trimmingWhitespace() == "*" })
        {
            return Response(status: 304, headers: headers)
        }
        headers.set("Content-Type", "application/json")
        return Response(status: 200, headers: headers, body: body)
    }
}
