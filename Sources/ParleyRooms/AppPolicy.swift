import ParleyWire

/// E7: what happens when a user enters a room from a second device.
public enum DevicePolicy: UInt8, Sendable, CaseIterable {
    /// The new session kicks the older ones with reason 3 (ConflictLogin).
    case singleDevice = 0
    /// Several sessions at once; the others get RC multi-login sync events.
    case multiDevice = 1
}

/// App-level switches, held in the state and changed only by the app server.
public struct AppPolicy: Sendable, Hashable {
    /// E7 default for rooms without their own policy.
    public var devicePolicy: DevicePolicy = .multiDevice
    /// E3 (RC): entering a room kicks the user from their previous room in this shard.
    public var oneRoomPerUser: Bool = false
    /// N4: send 301 / 302 (rooms may override).
    public var enterExitNotifications: Bool = true
    /// N4: keep 301 / 302 in stored history.
    public var storeEnterExitInHistory: Bool = true
    /// E12: RC member join / quit events with the member count.
    public var memberChangeEvents: Bool = false

    public init() {}
}

extension AppPolicy: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(devicePolicy.rawValue)
        w.write(oneRoomPerUser)
        w.write(enterExitNotifications)
        w.write(storeEnterExitInHistory)
        w.write(memberChangeEvents)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        devicePolicy = try r.readEnum()
        oneRoomPerUser = try r.readBool()
        enterExitNotifications = try r.readBool()
        storeEnterExitInHistory = try r.readBool()
        memberChangeEvents = try r.readBool()
    }
}
