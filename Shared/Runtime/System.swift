#if canImport(Glibc)
    import Glibc
#endif

/// Facts about the machine and process.
public enum System {
    /// Online CPU cores (at least 1).
    public static var coreCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// Resident memory of this process in bytes, from /proc/self/statm (0 when unavailable).
    public static func residentMemoryBytes() -> Int {
        guard let file = fopen("/proc/self/statm", "r") else { return 0 }
        defer { fclose(file) }
        var size = 0, resident = 0
        guard
            withUnsafeMutablePointer(
                to: &size,
                { s in
                    withUnsafeMutablePointer(to: &resident) { r in
                        readTwo(file, s, r)
                    }
                })
        else { return 0 }
        return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// At most two malloc arenas: glibc otherwise gives up to eight per core to the many
    /// threads a service runs (MHD's, the database's, the cooperative pool), and each keeps
    /// freed memory of its own. Called once at start, before the threads exist.
    public static func limitMallocArenas() {
        // mallopt(M_ARENA_MAX, 2); malloc.h is not part of Swift's Glibc module, hence dlsym.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        let arenaMax: Int32 = -8
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        _ = unsafeBitCast(symbol, to: Mallopt.self)(arenaMax, 2)
    }

    /// Raises this process's open-file limit to its hard limit (a server holding thousands of
    /// connections needs more than the usual 1,024) and returns the limit now in force.
    @discardableResult
    public static func raiseFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur > rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }

    private static func readTwo(
        _ file: UnsafeMutablePointer<FILE>, _ a: UnsafeMutablePointer<Int>, _ b: UnsafeMutablePointer<Int>
    ) -> Bool {
        var buffer = [CChar](repeating: 0, count: 128)
        guard fgets(&buffer, 128, file) != nil else { return false }
        let fields = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).split(
            separator: " ")
        guard fields.count >= 2, let first = Int(fields[0]), let second = Int(fields[1]) else { return false }
        a.pointee = first
        b.pointee = second
        return true
    }
}
