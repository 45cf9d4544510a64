/// The version of the contract between Pier and the plugins of other packages (docs/plugins.md):
/// what a plugin declares (``Service``), what it is given (``ServiceContext``, the capabilities
/// of the plugins beside it) and what it must not do. Additions keep the version; a change that
/// makes a plugin written for the last version fail to build or behave otherwise raises it, and
/// the CHANGELOG says what to do.
public enum PluginContract {
    public static let version = 1
}
