/// A session's authentication mode as the server reports it (`authMode`, E5).
public enum AuthMode: String, Sendable, Hashable, Codable {
    case im, independent, anonymous
}

/// The answer to an enter (docs/protocol.md, op `enter`).
public struct ChatroomEnterResult: Sendable, Hashable, Codable {
    public var room: Room
    public var member: Member
    public var authMode: AuthMode
    /// The account the session runs as (the generated `anon-…` one for anonymous users).
    public var account: String
    /// The server replayed what happened after `lastSeq` (X2); false on a first enter.
    public var resumed: Bool
    /// History no longer reaches back to `lastSeq + 1` (13112): refetch history and room state.
    public var gapTooOld: Bool
    /// With `lastSeq`: the first seq the server replays or sends live; what lies between `lastSeq` and it
    /// is not replayed (a gap past the server's resume bound, or history gone). Nil from older servers.
    public var replayFromSeq: Int64?
}
