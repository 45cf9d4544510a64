import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `pier NAME …` for a command `pier` does not have: the plugin's own command line
/// `pier-NAME` (remote config's `pier-config`), found beside `pier` or on `PATH`, runs in its
/// place with the same arguments and environment (and so the same session file), as `git`
/// runs `git-NAME`.
enum PluginCommands {
    /// `pier`'s own first words.
    static var builtIn: Set<String> { AccountCommands.names.union(["feedback", "status", "plans", "admin"]) }

    /// The executable of `name`, when it is a plugin command's name (lowercase letters, digits
    /// and `-`, starting with a letter) and one is installed.
    static func executable(for name: String, path: String?) -> String? {
        guard let first = name.first, first.isASCII, first.isLetter, first.isLowercase, name.count <= 40,
            name.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }), !builtIn.contains(name)
        else { return nil }
        var directories: [String] = []
        if let own = Bundle.main.executableURL?.resolvingSymlinksInPath().deletingLastPathComponent().path {
            directories.append(own)
        }
        directories += (path ?? "").split(separator: ":").map(String.init).filter { $0.hasPrefix("/") }
        return directories.map { $0 + "/pier-" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Replaces this process with `executable` and `arguments`; returns only when it cannot.
    static func run(_ executable: String, _ arguments: [String]) -> String {
        let all = [executable] + arguments
        var pointers = all.map { strdup($0) }
        pointers.append(nil)
        execv(executable, pointers)
        let reason = String(cString: strerror(errno))
        for pointer in pointers { free(pointer) }
        return "\(executable) could not be run: \(reason)"
    }
}
