import PierCrypto
import PierHTTP
import PierRuntime

extension Response {
    /// A JSON answer with an `ETag` (a digest of `validated`, by default the body): a request
    /// whose `If-None-Match` names it (or `*`) gets 304 with the same headers and no body, so a
    /// client checking on every launch moves no body while nothing changed. `validated` leaves
    /// out what changes with every answer without changing its meaning (a time to ask again,
    /// which the 304's `Cache-Control` renews); such a tag is weak (`W/`), as RFC 9110 says.
    public static func conditionalJSON(
        _ body: [UInt8], for request: Request, headers: HTTPHeaders, validated: [UInt8]? = nil
    ) -> Response {
        let tag = (validated == nil ? "" : "W/") + "\"" + hexString(SHA256.hash(validated ?? body).prefix(16)) + "\""
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
