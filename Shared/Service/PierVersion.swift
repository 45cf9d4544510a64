/// The version every executable reports with `--version`.
public enum PierVersion {
    public static let current = "0.1.0"
}
