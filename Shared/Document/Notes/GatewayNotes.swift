import PierModels

extension Notes {
    /// The notes of the gateway's own answers, by component name.
    static let gateway: [String: SchemaNotes] = [
        "Readiness": SchemaNotes(
            members: [
                "status": ["enum": ["ready", "unavailable"]]
            ])
    ]
}
