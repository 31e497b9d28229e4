import Foundation

/// The node's data folder holds the Raft logs, the rooms, app secrets and user tokens: readable by the
/// node's user only (0700, files 0600; issue 24). New files get that from the process umask (`restrictUmask`,
/// which SQLite's `-wal` and `-shm` files then follow); a folder made by an older version is repaired when
/// the node opens it.
public enum DataFolder {
    /// Files and folders this process creates from now on are its user's alone.
    public static func restrictUmask() {
        umask(0o077)
    }

    /// Creates the folder (0700) or repairs its modes and those of the regular files directly in it that
    /// this user owns (0600).
    public static func prepare(_ path: String) throws {
        let files = FileManager.default
        try files.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        try files.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
        let me = getuid()
        for name in (try? files.contentsOfDirectory(atPath: path)) ?? [] {
            let file = path + "/" + name
            var info = stat()
            guard lstat(file, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == me,
                  info.st_mode & 0o077 != 0 else { continue }
            chmod(file, info.st_mode & 0o700)
        }
    }
}
