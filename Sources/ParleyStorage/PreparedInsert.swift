import GRDB
import GRDBSQLite

/// A cached INSERT whose values are bound through SQLite's C API and stepped at once. GRDB's
/// `StatementArguments` box every value (an allocation each), which made binding the largest part of a busy
/// node's group commit. Used inside GRDB's transactions, for plain inserts that nothing observes.
struct PreparedInsert {
    private let statement: OpaquePointer
    private var next: Int32 = 1

    init(_ db: Database, sql: String) throws {
        statement = try db.cachedStatement(sql: sql).sqliteStatement
    }

    mutating func bind(_ value: Int64) {
        sqlite3_bind_int64(statement, next, value)
        next += 1
    }

    mutating func bind(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            _ = sqlite3_bind_text(statement, next, utf8.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                                  Int32(utf8.count), Self.transient)
        }
        next += 1
    }

    mutating func bind(bytes value: [UInt8]) {
        value.withUnsafeBytes { raw in
            // A zero-length blob must still be a blob, not NULL: SQLite needs a non-null pointer for that.
            _ = sqlite3_bind_blob(statement, next, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count),
                                  Self.transient)
        }
        next += 1
    }

    /// Runs the insert with the values bound so far, then readies the statement for the next row.
    mutating func run() throws {
        let code = sqlite3_step(statement)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
            next = 1
        }
        guard code == SQLITE_DONE else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code),
                                message: String(cString: sqlite3_errmsg(sqlite3_db_handle(statement))))
        }
    }

    /// SQLite copies the bytes before the bind returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}
