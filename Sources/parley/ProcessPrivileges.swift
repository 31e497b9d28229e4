import Foundation

/// What this process may do that an ordinary user may not, read from /proc (Linux). The node needs none of
/// it; it only says what it will not get (docs/operations.md, "Privileges").
struct ProcessPrivileges {
    /// Effective capabilities (the `CapEff` mask of /proc/self/status).
    var effective: UInt64
    /// The soft RLIMIT_NICE: a process may lower its nice value to 20 − this.
    var niceLimit: Int

    static var current: ProcessPrivileges {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let mask = status.split(separator: "\n").first { $0.hasPrefix("CapEff:") }
            .flatMap { UInt64($0.dropFirst("CapEff:".count).trimmingCharacters(in: .whitespaces), radix: 16) } ?? 0
        // "Max nice priority   0   0" in /proc/self/limits (soft, hard): RLIMIT_NICE, without the C constant.
        let limits = (try? String(contentsOfFile: "/proc/self/limits", encoding: .utf8)) ?? ""
        let nice = limits.split(separator: "\n").first { $0.hasPrefix("Max nice priority") }
            .flatMap { $0.dropFirst("Max nice priority".count).split(separator: " ").first.flatMap { Int($0) } } ?? 0
        return ProcessPrivileges(effective: mask, niceLimit: nice)
    }

    static let capSysNice: UInt64 = 1 << 23

    /// Whether a thread may set a negative nice value (CAP_SYS_NICE, or an RLIMIT_NICE above 20).
    var maySetNegativeNice: Bool { effective & Self.capSysNice != 0 || niceLimit > 20 }
}
