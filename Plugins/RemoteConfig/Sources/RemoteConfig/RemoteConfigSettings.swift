import PierPlugin

extension RemoteConfigService {
    /// The settings remote config reads, declared once:
    /// docs/settings.md is made of these.
    public static let settings: [SettingDeclaration] = [
        .init(
            "PIER_CONFIG_COUNTRY_HEADER", default: "none (rules on countries never hold)",
            #"""
            the request header your load balancer puts the caller's country in (ISO 3166 alpha-2:
            `CF-IPCountry`, `CloudFront-Viewer-Country`)
            """#)
    ]
}
