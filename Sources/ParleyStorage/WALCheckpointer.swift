import GRDB
import GRDBSQLite
import Synchronization

/// Copies a database's WAL into its main file on a connection and a queue of its own, so that neither the
/// copy nor the database file's fsync happens inside the writer's commit.
///
/// SQLite's automatic checkpoint runs in the connection that commits, right after the commit: on a node
/// that connection is the Raft loop's, and a checkpoint of tens of MiB (written, then synced) stopped every
/// group on the node for up to a tenth of a second, more often as the files grew. Here the writer only
/// reports the WAL's size after each commit (SQLite's WAL hook, which replaces the automatic checkpoint);
/// once enough frames wait, a PASSIVE checkpoint runs on this connection while the writer goes on. A PASSIVE
/// checkpoint never blocks a writer. When it has copied every frame, the writer's next transaction starts
/// the WAL again from its beginning, and `journal_size_limit` truncates a WAL that had grown.
///
/// The writer copies the last few frames itself (see `step`), and should the copies here fall far behind, it
/// checkpoints inside its own commit past `writerFrames`, as SQLite would, so the WAL stays bounded.
final class WALCheckpointer: Sendable {
    private let queue: DatabaseQueue
    /// Frames not yet copied that start a checkpoint here.
    let startFrames: Int
    /// Frames left after the copies here that the writer copies itself, so the WAL can start again.
    let finishFrames: Int
    /// WAL frames past which the writer checkpoints itself (the copies here fell far behind).
    let writerFrames: Int
    private let state = Mutex(State())

    struct State {
        /// A checkpoint is queued or running on `queue`.
        var running = false
        /// Frames of the current WAL the last checkpoint here had copied.
        var backfilled = 0
        /// Checkpoints run here and frames they copied (tests and /metrics read them).
        var checkpoints = 0
        var framesCopied = 0
    }

    init(path: String, durable: Bool, startFrames: Int, writerFrames: Int) throws {
        self.startFrames = startFrames
        finishFrames = max(16, startFrames / 32)
        self.writerFrames = writerFrames
        var config = Configuration()
        config.label = "parley-node-checkpoint"
        queue = try DatabaseQueue(path: path, configuration: config)
        // The checkpoint syncs the database file before it lets the WAL be reused (unless fsync is off).
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: durable ? "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = OFF")
        }
    }

    /// Installs the WAL hook on the writer's connection (replacing SQLite's automatic checkpoint).
    func attach(to writer: Database) {
        sqlite3_wal_hook(writer.sqliteConnection, { context, connection, _, frames in
            let checkpointer = Unmanaged<WALCheckpointer>.fromOpaque(context!).takeUnretainedValue()
            if checkpointer.committed(walFrames: Int(frames)) == .copyInWriter {
                var log: Int32 = 0, done: Int32 = 0
                if sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &done) == SQLITE_OK {
                    checkpointer.writerCopied(done: Int(done))
                }
            }
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Removes the hook (before the checkpointer goes away).
    func detach(from writer: Database) {
        sqlite3_wal_hook(writer.sqliteConnection, nil, nil)
    }

    enum Step: Equatable {
        case none
        /// Start a checkpoint on this connection.
        case copyHere
        /// The writer copies, in its commit: the few frames left, or far too many.
        case copyInWriter
    }

    /// What a commit that left `frames` in the WAL starts. A WAL starts again from its beginning only when a
    /// writer begins after every frame was copied, and a writer that never pauses outruns checkpoints made
    /// beside it: the WAL then grew without end (to 285 MB in 40 s at 1000 clients), each commit writing
    /// into fresh blocks the file system zeroes first. So the bulk is copied here, and the last few frames
    /// (at most `finishFrames`) by the writer itself, after which its next transaction starts the WAL again.
    static func step(frames: Int, state s: inout State, startFrames: Int, finishFrames: Int, writerFrames: Int) -> Step {
        // Fewer frames than were copied: the writer started the WAL again, and every frame is new.
        if frames < s.backfilled { s.backfilled = 0 }
        let waiting = frames - s.backfilled
        if frames >= writerFrames { return .copyInWriter }
        guard !s.running else { return .none }
        if s.backfilled > 0, waiting <= finishFrames { return .copyInWriter }
        guard waiting >= (s.backfilled > 0 ? finishFrames : startFrames) else { return .none }
        s.running = true
        return .copyHere
    }

    /// Called by SQLite on the writer's thread after each commit, with the frames the WAL now holds.
    private func committed(walFrames frames: Int) -> Step {
        let step = state.withLock {
            Self.step(frames: frames, state: &$0, startFrames: startFrames, finishFrames: finishFrames, writerFrames: writerFrames)
        }
        if step == .copyHere { queue.asyncWriteWithoutTransaction { db in self.catchUp(db) } }
        return step
    }

    /// The writer's own checkpoint copied the WAL through frame `done` (not counted as copied here).
    private func writerCopied(done: Int) {
        state.withLock { $0.backfilled = done }
    }

    /// Copies what the WAL holds, again while a round leaves frames behind (the writer kept committing),
    /// a few rounds at most: the next commits start another.
    private func catchUp(_ db: Database) {
        var backfilled = state.withLock { $0.backfilled }, copied = 0, rounds = 0
        for _ in 0..<4 {
            guard let row = try? Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(PASSIVE)") else { break }
            let log: Int = row[1], done: Int = row[2]
            rounds += 1
            copied += done >= backfilled ? done - backfilled : done  // less: the WAL was started again
            backfilled = done
            if done >= log { break }
        }
        state.withLock {
            $0.running = false
            $0.backfilled = backfilled
            $0.checkpoints += rounds
            $0.framesCopied += copied
        }
    }

    /// Checkpoints run here and the frames they copied so far.
    var counts: (checkpoints: Int, framesCopied: Int) { state.withLock { ($0.checkpoints, $0.framesCopied) } }

    /// Waits for a queued or running checkpoint to finish (tests).
    func waitUntilIdle() {
        queue.inDatabase { _ in }
    }
}
