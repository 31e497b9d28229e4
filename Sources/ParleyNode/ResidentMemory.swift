import Foundation

/// A process's resident memory as the kernel counts it (`VmRSS` of /proc/PID/status), in bytes; nil where
/// there is none (not Linux, or the process is gone).
public enum ResidentMemory {
    public static func bytes(ofProcess pid: String = "self") -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kb = Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") else { return nil }
        return kb * 1024
    }
}
