/// SPEC A8: apps are tenants. Every room lives in its app's namespace: the cluster knows app `evil`'s room
/// `lobby` as `evil␟lobby` (U+001F between them), so it is a different room from app `dev`'s `lobby`, hashes
/// to its own shard, and no id a client or an app server can send names another app's room (U+001F is
/// refused in ids at the edge and the server API). State kept per user across rooms — global mutes, room
/// slots, the rooms a user is in — is keyed by the user's account in the same namespace, and app policies
/// by namespace. The edge and the server API scope ids on the way in and strip the namespace on the way
/// out; the state machine derives a room's namespace from its id and never sees an app key otherwise.
///
/// The empty namespace holds rooms made before apps were tenants; one configured app may keep using them
/// (`--legacy-rooms-app`, docs/operations.md), every other app has its own.
public enum AppScope {
    public static let separator: Character = "\u{1F}"
    static let separatorByte: UInt8 = 0x1F

    /// The namespace of an app's rooms: the app key, or "" for the app that keeps the rooms made before.
    public static func namespace(ofApp appKey: String, legacyApp: String?) -> String {
        appKey == legacyApp ? "" : appKey
    }

    /// The cluster's id for the id `local` that a client or app server of `namespace` uses.
    public static func scoped(_ local: String, in namespace: String) -> String {
        namespace.isEmpty ? local : namespace + "\u{1F}" + local
    }

    /// The namespace of a scoped id ("" for one without).
    public static func namespace(of scoped: String) -> String {
        guard let i = scoped.utf8.firstIndex(of: separatorByte) else { return "" }
        return String(scoped[..<i])
    }

    /// A message that names ids of `namespace`, with each as its app knows it (for refusals shown to the app).
    public static func localIds(in message: String, namespace: String) -> String {
        namespace.isEmpty ? message : message.replacing(namespace + "\u{1F}", with: "")
    }

    /// The id as its app knows it.
    public static func local(_ scoped: String) -> String {
        guard let i = scoped.utf8.firstIndex(of: separatorByte) else { return scoped }
        return String(scoped[scoped.utf8.index(after: i)...])
    }

    /// The key of state kept for `account` across the rooms of `room`'s app.
    public static func user(_ account: String, ofRoom room: String) -> String {
        scoped(account, in: namespace(of: room))
    }

    /// Whether an id from outside may be used: it cannot name a namespace.
    public static func isLocal(_ id: String) -> Bool {
        !id.utf8.contains(separatorByte)
    }
}
