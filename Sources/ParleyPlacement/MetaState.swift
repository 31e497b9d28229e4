import ParleyRaft
import ParleyRooms
import ParleyWire
import ParleyShardState

/// What the cluster knows of one node.
public struct NodeRecord: Sendable, Hashable, Codable {
    /// `removed`: marked for removal, its replicas moving off; `dropped`: every replica and leader moved off,
    /// no longer a peer of anyone (the record stays, so its id is never given to another node).
    public enum State: UInt8, Sendable, Hashable, Codable { case active = 0, draining = 1, removed = 2, dropped = 3 }

    public var id: NodeID
    /// host:port for other nodes (HTTP/2).
    public var peerAddress: String
    /// host:port for clients, the server API and /status.
    public var httpAddress: String
    public var state: State
    /// Entry time when the node first registered.
    public var registeredAt: Int64

    public init(id: NodeID, peerAddress: String, httpAddress: String, state: State = .active, registeredAt: Int64 = 0) {
        self.id = id
        self.peerAddress = peerAddress
        self.httpAddress = httpAddress
        self.state = state
        self.registeredAt = registeredAt
    }
}

/// An app server's credentials for the signed server API (NIM-style AppKey + AppSecret). The secret is
/// kept sealed (`MetaSecrets`): only a node holding the cluster secret opens it.
public struct AppCredential: Sendable, Hashable {
    public var appKey: String
    public var sealedSecret: [UInt8]
    public var createdAt: Int64
    /// Signed requests must carry `CheckSum2` (method, path and body signed, docs/api.md); NIM's CheckSum
    /// alone is refused. Set by `setAppSigning`, kept when `putApp` replaces the secret; not part of the
    /// `putApp` encoding, so log entries written before it existed still read.
    public var requiresSignedBody: Bool

    public init(appKey: String, sealedSecret: [UInt8], createdAt: Int64 = 0, requiresSignedBody: Bool = false) {
        self.appKey = appKey
        self.sealedSecret = sealedSecret
        self.createdAt = createdAt
        self.requiresSignedBody = requiresSignedBody
    }
}

/// A chat user of an app, registered by the app server (E4, E5): the account and its current login token.
/// The same token serves independent mode (username + token) and the IM-session mode of the edge. Only its
/// keyed digest is kept (`MetaSecrets.tokenDigest`).
public struct UserRecord: Sendable, Hashable {
    public var appKey: String
    public var account: String
    public var name: String
    public var avatar: String
    public var tokenDigest: [UInt8]
    /// Entry time (ms) after which the token is refused; 0 = never expires.
    public var tokenExpiresAt: Int64
    /// A revoked token is refused until the app server sets a new one.
    public var revoked: Bool
    public var createdAt: Int64

    public init(appKey: String, account: String, name: String = "", avatar: String = "", tokenDigest: [UInt8],
                tokenExpiresAt: Int64 = 0, revoked: Bool = false, createdAt: Int64 = 0) {
        self.appKey = appKey
        self.account = account
        self.name = name
        self.avatar = avatar
        self.tokenDigest = tokenDigest
        self.tokenExpiresAt = tokenExpiresAt
        self.revoked = revoked
        self.createdAt = createdAt
    }

    /// The key of the user table: accounts are unique per app.
    public var key: String { Self.key(appKey: appKey, account: account) }
    public static func key(appKey: String, account: String) -> String { appKey + "\u{1F}" + account }
}

/// Why a token check failed (or that it passed).
public enum TokenVerdict: Sendable, Hashable {
    case valid(UserRecord)
    case unknownApp
    case unknownUser
    case badToken
    case expired
    case revoked
}

/// A change to the cluster's meta state.
public enum MetaCommand: Sendable, Hashable {
    /// Adds a node or updates its addresses (a removed node stays removed).
    case registerNode(NodeRecord)
    case setNodeState(NodeID, NodeRecord.State)
    /// Replaces the shard placement table if its version is still `expectedVersion` (compare-and-set, so
    /// two nodes that compute a table at once cannot both install one).
    case setPlacement(expectedVersion: UInt64, replicas: [[NodeID]])
    case putApp(AppCredential)
    case removeApp(appKey: String)
    /// Creates a user of a registered app or replaces its name, avatar and token (refresh).
    case putUser(UserRecord)
    /// Creates a user; refused (`alreadyExists`) when the account exists. The check is in the log's order, so
    /// two creates of one account cannot both succeed, and a replayed create meets its request key first.
    case createUser(UserRecord)
    /// Refuses the user's current token from now on.
    case revokeToken(appKey: String, account: String)
    /// Whether the app's signed requests must sign their method, path and body (`CheckSum2`).
    case setAppSigning(appKey: String, requireSignedBody: Bool)
    /// SPEC T2: `putApp` with the signing rule a new app starts with, in one entry (a new app requires
    /// CheckSum2 unless its creator chose otherwise); an app that exists keeps its rule, as with `putApp`.
    /// Written only once every node reads it (`PeerProtocol.Feature.appSigning`).
    case createApp(AppCredential, requireSignedBody: Bool)
    /// Claims a nonce for the whole cluster. It changes nothing itself: the request key it carries is what the
    /// meta group's ledger records, so a second claim of the same nonce, from any node, is refused (10406)
    /// while the first could still be accepted. `scope` says whose nonces: an app's key (SPEC T2: the nonce of
    /// a signed request, `app␟nonce#nonce`) or `joinScope` (the credential of a node joining by address).
    case claimNonce(scope: String)
    /// SPEC A1: the app's connection request budget (nil: back to the node's default). Written only once
    /// every node reads it (`PeerProtocol.Feature.connectionBudgets`).
    case setConnectionBudget(appKey: String, ConnectionBudget?)
    /// SPEC W1: the app's webhooks (nil: none). Written only once every node reads it
    /// (`PeerProtocol.Feature.webhooks`).
    case setWebhooks(appKey: String, WebhookSettings?)
    /// SPEC D3: the most messages a second one edge delivers to one room's members of the app (nil: no
    /// ceiling). Written only once every node reads it (`PeerProtocol.Feature.messagePriority`).
    case setRoomCeiling(appKey: String, messagesPerSecond: Int?)
}

/// What applying a meta command did.
public enum MetaOutcome: Sendable, Hashable {
    case done
    /// The placement table now has this version.
    case placement(version: UInt64)
    case refused(code: Int, message: String)

    public static func refusal(_ code: MetaRefusal, _ message: String) -> MetaOutcome {
        .refused(code: code.rawValue, message: message)
    }
}

/// Stable codes of refused meta commands.
public enum MetaRefusal: Int, Sendable {
    case noPermission = 403
    case notFound = 404
    case badParameter = 414
    case versionConflict = 409
    /// The server API's "account exists" (10409).
    case alreadyExists = 10409
}

/// The meta group's state: the node registry, the shard placement table with its version, and the app
/// credentials. Deterministic: serialized in sorted order, time only from the entry.
public struct MetaState: ReplicatedMachine, Sendable, Equatable {
    public static func refusedRequest(_ why: RequestRefusal) -> MetaOutcome { .refused(code: why.code, message: why.message) }

    public private(set) var nodes: [NodeID: NodeRecord] = [:]
    public private(set) var placementVersion: UInt64 = 0
    /// Replicas of each shard, best first; empty until the first table is installed.
    public private(set) var placement: [[NodeID]] = []
    public private(set) var apps: [String: AppCredential] = [:]
    /// Users by `UserRecord.key`.
    public private(set) var users: [String: UserRecord] = [:]
    /// A1: the apps whose connections have a request budget of their own (`ConnectionBudget`).
    public private(set) var connectionBudgets: [String: ConnectionBudget] = [:]
    /// W1: the apps' webhooks.
    public private(set) var webhooks: [String: WebhookSettings] = [:]
    /// D3: the apps whose rooms have a delivered-rate ceiling (messages a second, per room and edge).
    public private(set) var roomCeilings: [String: Int] = [:]
    /// The range a room ceiling may take.
    public static let roomCeilingRange = 1...1_000_000

    /// Field limits of user records.
    public static let maxAccountBytes = 128
    public static let maxTokenBytes = 256
    public static let maxUserNameBytes = 128
    public static let maxAvatarBytes = 1024

    public init() {}

    public func user(appKey: String, account: String) -> UserRecord? {
        users[UserRecord.key(appKey: appKey, account: account)]
    }

    /// E4 / E5: checks a login token at time `now` (ms) against the stored digest, in constant time.
    public func checkToken(appKey: String, account: String, token: String, now: Int64,
                           secrets: MetaSecrets) -> TokenVerdict {
        guard apps[appKey] != nil else { return .unknownApp }
        guard let user = user(appKey: appKey, account: account) else { return .unknownUser }
        guard secrets.tokenMatches(user.tokenDigest, appKey: appKey, account: account, token: token) else {
            return .badToken
        }
        if user.revoked { return .revoked }
        if user.tokenExpiresAt != 0, now >= user.tokenExpiresAt { return .expired }
        return .valid(user)
    }

    public mutating func apply(_ command: MetaCommand, context: ApplyContext) -> MetaOutcome {
        guard case .appServer = context.actor else { return .refusal(.noPermission, "only the cluster changes meta state") }
        switch command {
        case .registerNode(var record):
            guard record.id != 0, Self.isAddress(record.peerAddress), Self.isAddress(record.httpAddress) else {
                return .refusal(.badParameter, "a node needs a non-zero id and host:port addresses")
            }
            if let known = nodes[record.id] {
                record.state = known.state
                record.registeredAt = known.registeredAt
            } else {
                record.state = .active
                record.registeredAt = context.timestamp
            }
            nodes[record.id] = record
            return .done
        case .setNodeState(let id, let state):
            guard let known = nodes[id] else { return .refusal(.notFound, "no node \(id)") }
            guard known.state != .dropped || state == .dropped else {
                return .refusal(.versionConflict, "node \(id) has left the cluster")
            }
            if state == .dropped {
                guard known.state == .removed || known.state == .dropped else {
                    return .refusal(.versionConflict, "node \(id) is \(known.state); only a removed node is dropped")
                }
                guard !placement.joined().contains(id) else {
                    return .refusal(.versionConflict, "the placement still puts replicas on node \(id)")
                }
            }
            nodes[id]!.state = state
            return .done
        case .setPlacement(let expected, let replicas):
            guard expected == placementVersion else {
                return .refusal(.versionConflict, "placement is at version \(placementVersion), not \(expected)")
            }
            guard !replicas.isEmpty, replicas.allSatisfy({ !$0.isEmpty && Set($0).count == $0.count }),
                  replicas.joined().allSatisfy({ nodes[$0] != nil }) else {
                return .refusal(.badParameter, "every shard needs distinct, registered replicas")
            }
            placement = replicas
            placementVersion += 1
            return .placement(version: placementVersion)
        case .putApp(var app):
            let sealed = (16 + MetaSecrets.sealOverhead)...(128 + MetaSecrets.sealOverhead)
            guard (1...64).contains(app.appKey.utf8.count), sealed.contains(app.sealedSecret.count),
                  app.appKey.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
                return .refusal(.badParameter, "appKey must be 1-64 printable bytes and the secret 16-128 bytes")
            }
            app.createdAt = apps[app.appKey]?.createdAt ?? context.timestamp
            app.requiresSignedBody = apps[app.appKey]?.requiresSignedBody ?? false
            apps[app.appKey] = app
            return .done
        case .removeApp(let key):
            guard apps.removeValue(forKey: key) != nil else { return .refusal(.notFound, "no app \(key)") }
            users = users.filter { $0.value.appKey != key }
            connectionBudgets[key] = nil
            webhooks[key] = nil
            roomCeilings[key] = nil
            return .done
        case .createUser(let user):
            guard users[user.key] == nil else { return .refusal(.alreadyExists, "the account \(user.account) exists") }
            return apply(.putUser(user), context: context)
        case .putUser(var user):
            guard apps[user.appKey] != nil else { return .refusal(.notFound, "no app \(user.appKey)") }
            guard (1...Self.maxAccountBytes).contains(user.account.utf8.count),
                  user.account.utf8.allSatisfy({ $0 > 32 && $0 < 127 }),
                  user.tokenDigest.count == MetaSecrets.digestBytes,
                  user.name.utf8.count <= Self.maxUserNameBytes, user.avatar.utf8.count <= Self.maxAvatarBytes,
                  user.tokenExpiresAt >= 0 else {
                return .refusal(.badParameter,
                                "account 1-\(Self.maxAccountBytes) printable bytes, a token digest, name ≤ \(Self.maxUserNameBytes), avatar ≤ \(Self.maxAvatarBytes)")
            }
            user.createdAt = users[user.key]?.createdAt ?? context.timestamp
            user.revoked = false
            users[user.key] = user
            return .done
        case .revokeToken(let appKey, let account):
            let key = UserRecord.key(appKey: appKey, account: account)
            guard users[key] != nil else { return .refusal(.notFound, "no user \(account)") }
            users[key]!.revoked = true
            return .done
        case .setAppSigning(let key, let required):
            guard apps[key] != nil else { return .refusal(.notFound, "no app \(key)") }
            apps[key]!.requiresSignedBody = required
            return .done
        case .createApp(let app, let required):
            let isNew = apps[app.appKey] == nil
            let outcome = apply(.putApp(app), context: context)
            if case .done = outcome, isNew { apps[app.appKey]!.requiresSignedBody = required }
            return outcome
        case .claimNonce:
            return .done
        case .setConnectionBudget(let key, let budget):
            guard apps[key] != nil else { return .refusal(.notFound, "no app \(key)") }
            if let budget, !budget.isValid {
                return .refusal(.badParameter, "a connection's rate must be 1 … 1000000 a second and its burst at least its rate")
            }
            connectionBudgets[key] = budget
            return .done
        case .setWebhooks(let key, let settings):
            guard apps[key] != nil else { return .refusal(.notFound, "no app \(key)") }
            if let problem = settings?.problem { return .refusal(.badParameter, problem) }
            webhooks[key] = settings
            return .done
        case .setRoomCeiling(let key, let ceiling):
            guard apps[key] != nil else { return .refusal(.notFound, "no app \(key)") }
            if let ceiling, !Self.roomCeilingRange.contains(ceiling) {
                return .refusal(.badParameter, "a room's ceiling must be 1 … 1000000 messages a second")
            }
            roomCeilings[key] = ceiling
            return .done
        }
    }

    private static func isAddress(_ s: String) -> Bool {
        guard (3...256).contains(s.utf8.count), let colon = s.lastIndex(of: ":") else { return false }
        return Int(s[s.index(after: colon)...]).map { (1...65535).contains($0) } ?? false
    }

    // MARK: Snapshot

    /// 3 adds the apps that require signed bodies; 4 holds sealed secrets and token digests, where 2 and 3
    /// held them in clear (not read any more: docs/operations.md, "Upgrades"); 5 adds the connection budgets
    /// after the signed-body apps. A state without connection budgets is still written as 4, so a node that
    /// reads only 4 takes it during a rolling upgrade (budgets exist only once every node reads 5); 6 adds the
    /// webhooks after the budgets (written only when an app has webhooks, which exist once every node reads 6);
    /// 7 adds the room ceilings after the webhooks (D3, likewise).
    public static let snapshotVersion: UInt8 = 7

    public func snapshot() -> [UInt8] {
        var w = ByteWriter()
        let v: UInt8 = !roomCeilings.isEmpty ? 7 : !webhooks.isEmpty ? 6 : !connectionBudgets.isEmpty ? 5 : 4
        w.write(v)
        w.write(UInt64(nodes.count))
        for id in nodes.keys.sorted() { w.write(nodes[id]!) }
        w.write(placementVersion)
        w.write(UInt64(placement.count))
        for replicas in placement { w.write(UInt64(replicas.count)); replicas.forEach { w.write($0) } }
        w.write(UInt64(apps.count))
        for key in apps.keys.sorted() { w.write(apps[key]!) }
        w.write(UInt64(users.count))
        for key in users.keys.sorted() { w.write(users[key]!) }
        let signed = apps.keys.sorted().filter { apps[$0]!.requiresSignedBody }
        w.write(UInt64(signed.count))
        for key in signed { w.write(key) }
        if v >= 5 {
            w.write(UInt64(connectionBudgets.count))
            for key in connectionBudgets.keys.sorted() { w.write(key); w.write(connectionBudgets[key]!) }
        }
        if v >= 6 {
            w.write(UInt64(webhooks.count))
            for key in webhooks.keys.sorted() { w.write(key); w.write(webhooks[key]!) }
        }
        if v >= 7 {
            w.write(UInt64(roomCeilings.count))
            for key in roomCeilings.keys.sorted() { w.write(key); w.write(roomCeilings[key]!) }
        }
        return w.bytes
    }

    public init(restoring bytes: [UInt8]) throws {
        var r = ByteReader(bytes)
        let v = try r.readByte()
        guard (4...Self.snapshotVersion).contains(v) else { throw CodecError.badVersion(v) }
        for _ in 0..<(try r.readCount()) {
            let n = try r.read(NodeRecord.self)
            nodes[n.id] = n
        }
        placementVersion = try r.readUInt64()
        for _ in 0..<(try r.readCount()) {
            var replicas: [NodeID] = []
            for _ in 0..<(try r.readCount()) { replicas.append(try r.readUInt64()) }
            placement.append(replicas)
        }
        for _ in 0..<(try r.readCount()) {
            let a = try r.read(AppCredential.self)
            apps[a.appKey] = a
        }
        for _ in 0..<(try r.readCount()) {
            let u = try r.read(UserRecord.self)
            users[u.key] = u
        }
        for _ in 0..<(try r.readCount()) {
            let key = try r.readString()
            guard apps[key] != nil else { throw CodecError.badTag("signed-body app", 0) }
            apps[key]!.requiresSignedBody = true
        }
        if v >= 5 {
            for _ in 0..<(try r.readCount()) {
                let key = try r.readString()
                guard apps[key] != nil else { throw CodecError.badTag("connection budget app", 0) }
                connectionBudgets[key] = try r.read(ConnectionBudget.self)
            }
        }
        if v >= 6 {
            for _ in 0..<(try r.readCount()) {
                let key = try r.readString()
                guard apps[key] != nil else { throw CodecError.badTag("webhook app", 0) }
                webhooks[key] = try r.read(WebhookSettings.self)
            }
        }
        if v >= 7 {
            for _ in 0..<(try r.readCount()) {
                let key = try r.readString()
                let ceiling = try r.readInt()
                guard apps[key] != nil, Self.roomCeilingRange.contains(ceiling) else {
                    throw CodecError.badTag("room ceiling app", 0)
                }
                roomCeilings[key] = ceiling
            }
        }
        guard r.isAtEnd else { throw CodecError.trailingBytes(r.remaining) }
    }
}

extension NodeRecord: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(id)
        w.write(peerAddress)
        w.write(httpAddress)
        w.write(state.rawValue)
        w.write(registeredAt)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        id = try r.readUInt64()
        peerAddress = try r.readString()
        httpAddress = try r.readString()
        state = try r.readEnum()
        registeredAt = try r.readInt64()
    }
}

extension AppCredential: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(appKey)
        w.write(bytes: sealedSecret)
        w.write(createdAt)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        appKey = try r.readString()
        sealedSecret = try r.readBytes()
        createdAt = try r.readInt64()
        requiresSignedBody = false  // carried by setAppSigning and the snapshot, not here
    }
}

extension UserRecord: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(appKey)
        w.write(account)
        w.write(name)
        w.write(avatar)
        w.write(bytes: tokenDigest)
        w.write(tokenExpiresAt)
        w.write(revoked)
        w.write(createdAt)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        appKey = try r.readString()
        account = try r.readString()
        name = try r.readString()
        avatar = try r.readString()
        tokenDigest = try r.readBytes()
        tokenExpiresAt = try r.readInt64()
        revoked = try r.readBool()
        createdAt = try r.readInt64()
    }
}

extension MetaCommand: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        switch self {
        case .registerNode(let n): w.write(UInt8(0)); w.write(n)
        case .setNodeState(let id, let s): w.write(UInt8(1)); w.write(id); w.write(s.rawValue)
        case .setPlacement(let v, let replicas):
            w.write(UInt8(2)); w.write(v); w.write(UInt64(replicas.count))
            for list in replicas { w.write(UInt64(list.count)); list.forEach { w.write($0) } }
        case .putApp(let a): w.write(UInt8(8)); w.write(a)
        case .removeApp(let key): w.write(UInt8(4)); w.write(key)
        case .putUser(let u): w.write(UInt8(9)); w.write(u)
        case .revokeToken(let app, let account): w.write(UInt8(6)); w.write(app); w.write(account)
        case .setAppSigning(let app, let required): w.write(UInt8(7)); w.write(app); w.write(required)
        case .createUser(let u): w.write(UInt8(10)); w.write(u)
        case .createApp(let a, let required): w.write(UInt8(11)); w.write(a); w.write(required)
        case .claimNonce(let scope): w.write(UInt8(12)); w.write(scope)
        case .setConnectionBudget(let app, let budget):
            w.write(UInt8(13)); w.write(app); w.write(budget != nil)
            if let budget { w.write(budget) }
        case .setWebhooks(let app, let settings):
            w.write(UInt8(14)); w.write(app); w.write(settings != nil)
            if let settings { w.write(settings) }
        case .setRoomCeiling(let app, let ceiling):
            w.write(UInt8(15)); w.write(app); w.write(ceiling != nil)
            if let ceiling { w.write(ceiling) }
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        switch try r.readByte() {
        case 0: self = .registerNode(try r.read())
        case 1: self = .setNodeState(try r.readUInt64(), try r.readEnum())
        case 2:
            let v = try r.readUInt64()
            var replicas: [[NodeID]] = []
            for _ in 0..<(try r.readCount()) {
                var list: [NodeID] = []
                for _ in 0..<(try r.readCount()) { list.append(try r.readUInt64()) }
                replicas.append(list)
            }
            self = .setPlacement(expectedVersion: v, replicas: replicas)
        // 3 and 5 were putApp and putUser with the secret and the token in clear: no longer read.
        case 8: self = .putApp(try r.read())
        case 4: self = .removeApp(appKey: try r.readString())
        case 9: self = .putUser(try r.read())
        case 10: self = .createUser(try r.read())
        case 6: self = .revokeToken(appKey: try r.readString(), account: try r.readString())
        case 7: self = .setAppSigning(appKey: try r.readString(), requireSignedBody: try r.readBool())
        case 11: self = .createApp(try r.read(), requireSignedBody: try r.readBool())
        case 12: self = .claimNonce(scope: try r.readString())
        case 13:
            let app = try r.readString()
            self = .setConnectionBudget(appKey: app, try r.readBool() ? try r.read(ConnectionBudget.self) : nil)
        case 14:
            let app = try r.readString()
            self = .setWebhooks(appKey: app, try r.readBool() ? try r.read(WebhookSettings.self) : nil)
        case 15:
            let app = try r.readString()
            self = .setRoomCeiling(appKey: app, messagesPerSecond: try r.readBool() ? try r.readInt() : nil)
        case let t: throw .badTag("MetaCommand", UInt64(t))
        }
    }
}

extension MetaOutcome: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        switch self {
        case .done: w.write(UInt8(0))
        case .placement(let v): w.write(UInt8(1)); w.write(v)
        case .refused(let code, let message): w.write(UInt8(2)); w.write(code); w.write(message)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        switch try r.readByte() {
        case 0: self = .done
        case 1: self = .placement(version: try r.readUInt64())
        case 2: self = .refused(code: try r.readInt(), message: try r.readString())
        case let t: throw .badTag("MetaOutcome", UInt64(t))
        }
    }
}
