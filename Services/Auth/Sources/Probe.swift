enum Probe { static let n = PackageResources.common_passwords_txt.count }
