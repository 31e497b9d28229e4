import ParleyShardState
import ParleyWire

/// SPEC W1: where an app's webhooks go and what they carry. Kept in the meta group
/// (`MetaCommand.setWebhooks`), so every node knows it; the app sets it through `/v1/app/setWebhooks`
/// (docs/webhooks.md).
public struct WebhookSettings: Sendable, Hashable {
    /// The after-event callbacks an app may ask for (W2), by the name it gives them.
    public enum Event: String, CaseIterable, Sendable, Comparable {
        case roomMessage = "room.message"
        case roomEnter = "room.enter"
        case roomExit = "room.exit"
        case roomCreate = "room.create"
        case roomClose = "room.close"
        case roomUpdate = "room.update"
        case memberRole = "room.role"
        case memberMute = "room.mute"
        case queueChange = "room.queue"
        case p2pMessage = "im.p2p"
        case teamMessage = "im.team"

        public static func < (a: Event, b: Event) -> Bool { a.rawValue < b.rawValue }
    }

    /// What a message waits for when the pre-send callback (W3) times out or fails.
    public enum FailurePolicy: UInt8, Sendable {
        /// Fail open: the message is stored and delivered.
        case allow = 0
        /// Fail closed: the sender is told, nothing is stored.
        case refuse = 1
    }

    /// Which messages are shown to the app server before they are stored (W3).
    public enum PreSendRooms: Sendable, Hashable {
        case none
        case all
        case named([String])
    }

    /// Calls are made only while it is on (an app turns its webhooks off without losing the settings).
    public var enabled: Bool
    /// Where every call goes: an `http` or `https` URL.
    public var url: String
    /// The after-event callbacks wanted, sorted.
    public var events: [Event]
    public var preSendRooms: PreSendRooms
    /// Whether one-to-one and team messages are shown to the app server before they are stored, too.
    public var preSendIm: Bool
    /// How long a pre-send callback may take before `onFailure` applies.
    public var timeoutMillis: Int
    public var onFailure: FailurePolicy

    public static let defaultTimeoutMillis = 2_000
    public static let timeoutRange = 100...5_000
    public static let maxURLBytes = 1_024
    public static let maxNamedRooms = 1_000
    public static let maxRoomIdBytes = 128

    public init(enabled: Bool = true, url: String, events: [Event] = [], preSendRooms: PreSendRooms = .none,
                preSendIm: Bool = false, timeoutMillis: Int = WebhookSettings.defaultTimeoutMillis,
                onFailure: FailurePolicy = .allow) {
        self.enabled = enabled
        self.url = url
        self.events = Array(Set(events)).sorted()
        self.preSendRooms = preSendRooms
        self.preSendIm = preSendIm
        self.timeoutMillis = timeoutMillis
        self.onFailure = onFailure
    }

    /// Why these settings cannot be kept (nil: they can). The target's address is the node's to judge
    /// (`WebhookTargetRule`), not the replicated state's.
    public var problem: String? {
        guard (1...Self.maxURLBytes).contains(url.utf8.count) else { return "url must be 1 … \(Self.maxURLBytes) bytes" }
        guard WebhookTarget(url: url) != nil else {
            return "url must be http:// or https:// with a host, and no user, password or fragment"
        }
        guard Self.timeoutRange.contains(timeoutMillis) else {
            return "timeoutMillis must be \(Self.timeoutRange.lowerBound) … \(Self.timeoutRange.upperBound)"
        }
        if case .named(let rooms) = preSendRooms {
            guard (1...Self.maxNamedRooms).contains(rooms.count) else {
                return "preSend.rooms must name 1 … \(Self.maxNamedRooms) rooms, or be \"all\""
            }
            guard rooms.allSatisfy({ (1...Self.maxRoomIdBytes).contains($0.utf8.count) }) else {
                return "a room id in preSend.rooms must be 1 … \(Self.maxRoomIdBytes) bytes"
            }
        }
        return nil
    }

    /// Whether one-to-one and team messages are shown to the app server before they are stored.
    public var checksImBeforeSending: Bool { enabled && preSendIm }

    /// Whether a message in `roomId` is shown to the app server before it is stored.
    public func checksBeforeSending(roomId: String) -> Bool {
        guard enabled else { return false }
        switch preSendRooms {
        case .none: return false
        case .all: return true
        case .named(let rooms): return rooms.contains(roomId)
        }
    }
}

/// The scheme, host and port of a webhook URL, as far as a node needs them to decide whether it may call it.
public struct WebhookTarget: Sendable, Hashable {
    public var secure: Bool
    /// Lower-cased; an IPv6 literal without its brackets.
    public var host: String
    public var port: Int
    /// The path the call is signed over (without the query; "/" when the URL names none).
    public var path: String

    /// Nil for anything but `http(s)://host[:port][/path][?query]` (no user info, no fragment).
    public init?(url: String) {
        let lower = url.lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            secure = true
            rest = url.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            secure = false
            rest = url.dropFirst(7)
        } else {
            return nil
        }
        guard !url.contains("#"), !url.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F }) else {
            return nil
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        let afterAuthority = rest.dropFirst(authority.count)
        let pathPart = afterAuthority.prefix { $0 != "?" }
        path = pathPart.isEmpty ? "/" : String(pathPart)
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        var hostPart = Substring(authority)
        var portText: Substring?
        if hostPart.hasPrefix("[") {
            guard let close = hostPart.firstIndex(of: "]") else { return nil }
            let after = hostPart[hostPart.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { return nil }
            hostPart = hostPart[hostPart.index(after: hostPart.startIndex)..<close]
        } else if let colon = hostPart.lastIndex(of: ":") {
            portText = hostPart[hostPart.index(after: colon)...]
            hostPart = hostPart[..<colon]
        }
        guard !hostPart.isEmpty, hostPart.utf8.count <= 253 else { return nil }
        host = hostPart.lowercased()
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else { return nil }
            port = p
        } else {
            port = secure ? 443 : 80
        }
    }
}

extension WebhookSettings: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(enabled)
        w.write(url)
        w.write(UInt64(events.count))
        for e in events { w.write(e.rawValue) }
        switch preSendRooms {
        case .none: w.write(UInt8(0))
        case .all: w.write(UInt8(1))
        case .named(let rooms):
            w.write(UInt8(2))
            w.write(UInt64(rooms.count))
            for r in rooms { w.write(r) }
        }
        w.write(preSendIm)
        w.write(timeoutMillis)
        w.write(onFailure.rawValue)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        enabled = try r.readBool()
        url = try r.readString()
        var events: [Event] = []
        for _ in 0..<(try r.readCount()) {
            let name = try r.readString()
            guard let e = Event(rawValue: name) else { throw .invalidValue("webhook event \(name)") }
            events.append(e)
        }
        self.events = events
        switch try r.readByte() {
        case 0: preSendRooms = .none
        case 1: preSendRooms = .all
        case 2:
            var rooms: [String] = []
            for _ in 0..<(try r.readCount()) { rooms.append(try r.readString()) }
            preSendRooms = .named(rooms)
        case let t: throw .badTag("PreSendRooms", UInt64(t))
        }
        preSendIm = try r.readBool()
        timeoutMillis = try r.readInt()
        guard let policy = FailurePolicy(rawValue: try r.readByte()) else { throw .invalidValue("webhook failure policy") }
        onFailure = policy
    }
}

extension WebhookSettings.Event {
    /// The kind a shard keeps the event as (W2): the one table between the names an app uses and the shard's.
    public var kind: WebhookCopyKinds {
        switch self {
        case .roomMessage: .message
        case .roomEnter: .enter
        case .roomExit: .exit
        case .roomCreate: .create
        case .roomClose: .close
        case .roomUpdate: .update
        case .memberRole: .role
        case .memberMute: .mute
        case .queueChange: .queue
        case .p2pMessage: .p2p
        case .teamMessage: .team
        }
    }

    /// The event an after-event copy is delivered as (nil: a copy no app can ask for).
    public init?(_ copy: WebhookEvent) {
        guard let kind = WebhookCopyKinds.of(copy), let event = Self.allCases.first(where: { $0.kind == kind }) else {
            return nil
        }
        self = event
    }
}

extension WebhookCopyKinds {
    /// The kinds a shard keeps for an app that asked for `events` (W2).
    public init(_ events: [WebhookSettings.Event]) {
        self = []
        for e in events { insert(e.kind) }
    }
}
