import NIOCore
import ParleyTransport

/// SPEC D1: each shard's leader sets the byte bound of its rooms' history windows (`setHistoryWindow`) to the
/// node's setting, once every node reads the command (a rolling upgrade: until then the windows keep only their
/// per-room count and retention, as before). A shard applies it as any entry, so every replica drops the same
/// items at the same point of the log.
extension RaftDriver {
    func settleHistoryWindows() {
        loop.preconditionInEventLoop()
        settleImLogWindows()
        refresh(windowReaders, now: .now())
        guard windowReaders.everyNode else { return }
        for shard in host.shards where !settingWindow.contains(shard) {
            guard let bytes = host.historyWindowToSet(shard: shard) else { continue }
            settingWindow.insert(shard)
            host.propose(.setHistoryWindow(bytes: bytes), shard: shard, actor: .appServer, timestamp: Self.now()) { _ in
                self.settingWindow.remove(shard)
            }
        }
    }

    /// Issue 38 item 5: the same for the shard's IM logs (`setLogWindow`), once every node reads it.
    private func settleImLogWindows() {
        refresh(imWindowReaders, now: .now())
        guard imWindowReaders.everyNode else { return }
        for shard in host.shards where !settingImWindow.contains(shard) {
            guard let bytes = host.imLogWindowToSet(shard: shard) else { continue }
            settingImWindow.insert(shard)
            host.propose(.im(account: "", .setLogWindow(bytes: bytes)), shard: shard, actor: .appServer, timestamp: Self.now()) { _ in
                self.settingImWindow.remove(shard)
            }
        }
    }
}
