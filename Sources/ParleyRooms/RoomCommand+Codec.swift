import ParleyWire

extension CreateRoom: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(roomId); w.write(creator); w.write(name); w.write(announcement); w.write(ext)
        w.write(broadcastUrl); w.write(queueModificationLevel.rawValue)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        self.init(roomId: try r.readString(), creator: try r.readString(), name: try r.readString(),
                  announcement: try r.readString(), ext: try r.readString(), broadcastUrl: try r.readString(),
                  queueModificationLevel: try r.readEnum())
    }
}

extension UpdateRoom: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(roomId); w.write(name); w.write(announcement); w.write(broadcastUrl); w.write(ext)
        w.write(UInt8(queueModificationLevel.map { $0.rawValue + 1 } ?? 0))
        w.write(needNotify); w.write(notifyExt)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        roomId = try r.readString()
        name = try r.readOptionalString()
        announcement = try r.readOptionalString()
        broadcastUrl = try r.readOptionalString()
        ext = try r.readOptionalString()
        let level = try r.readByte()
        if level == 0 {
            queueModificationLevel = nil
        } else {
            guard let l = QueueModificationLevel(rawValue: level - 1) else {
                throw .badTag("QueueModificationLevel", UInt64(level))
            }
            queueModificationLevel = l
        }
        needNotify = try r.readBool()
        notifyExt = try r.readString()
    }
}

extension RoomPolicyUpdate: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(roomId); w.write(enterExitNotifications)
        w.write(UInt8(devicePolicy.map { $0.rawValue + 1 } ?? 0))
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        roomId = try r.readString()
        enterExitNotifications = try r.readOptionalBool()
        let p = try r.readByte()
        if p == 0 {
            devicePolicy = nil
        } else {
            guard let d = DevicePolicy(rawValue: p - 1) else { throw .badTag("DevicePolicy", UInt64(p)) }
            devicePolicy = d
        }
    }
}

extension EnterRoom: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(roomId); w.write(nickname); w.write(avatar); w.write(roomExt); w.write(roomNotifyExt)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        self.init(roomId: try r.readString(), nickname: try r.readString(), avatar: try r.readString(),
                  roomExt: try r.readString(), roomNotifyExt: try r.readString())
    }
}

extension SendMessage: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(roomId); w.write(type.rawValue); w.write(clientMessageId); w.write(body); w.write(ext)
        w.write(fromUser)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        self.init(roomId: try r.readString(), type: try r.readEnum(), clientMessageId: try r.readString(),
                  body: try r.readString(), ext: try r.readString(), fromUser: try r.readString())
    }
}

extension FetchMembers: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(roomId); w.write(kind.rawValue); w.write(anchor); w.write(limit)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        self.init(roomId: try r.readString(), kind: try r.readEnum(), anchor: try r.readUInt64(),
                  limit: try r.readInt())
    }
}

extension RoomUsers: BinaryCodable {
    public func encode(to w: inout ByteWriter) { w.write(roomId); w.write(userIds) }

    public init(from r: inout ByteReader) throws(CodecError) {
        self.init(roomId: try r.readString(), userIds: try r.readStrings())
    }
}

extension UpdateMyMemberInfo: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(roomId); w.write(nickname); w.write(avatar); w.write(ext); w.write(needNotify); w.write(notifyExt)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        self.init(roomId: try r.readString(), nickname: try r.readOptionalString(),
                  avatar: try r.readOptionalString(), ext: try r.readOptionalString(),
                  needNotify: try r.readBool(), notifyExt: try r.readString())
    }
}

extension MemberUpdate: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(roomId); w.write(userId); w.write(enable); w.write(duration); w.write(needNotify)
        w.write(notifyExt)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        self.init(roomId: try r.readString(), userId: try r.readString(), enable: try r.readBool(),
                  duration: try r.readUInt64(), needNotify: try r.readBool(), notifyExt: try r.readString())
    }
}

extension RoomSwitch: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(roomId); w.write(enable); w.write(userIds); w.write(needNotify); w.write(notifyExt)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        self.init(roomId: try r.readString(), enable: try r.readBool(), userIds: try r.readStrings(),
                  needNotify: try r.readBool(), notifyExt: try r.readString())
    }
}

extension GlobalMute: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(userId); w.write(enable); w.write(minutes); w.write(extra)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        self.init(userId: try r.readString(), enable: try r.readBool(), minutes: try r.readUInt64(),
                  extra: try r.readString())
    }
}

extension QueueOffer: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(roomId); w.write(key); w.write(value); w.write(transient)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        self.init(roomId: try r.readString(), key: try r.readString(), value: try r.readString(),
                  transient: try r.readBool())
    }
}

extension QueueBatchUpdate: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(roomId); w.write(elements); w.write(needNotify); w.write(notifyExt)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        self.init(roomId: try r.readString(), elements: try r.readArray(), needNotify: try r.readBool(),
                  notifyExt: try r.readString())
    }
}

extension HistoryQuery: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(roomId); w.write(startTime); w.write(limit); w.write(ascending)
        w.write(UInt64(types.count))
        for t in types { w.write(t.rawValue) }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        roomId = try r.readString()
        startTime = try r.readInt64()
        limit = try r.readInt()
        ascending = try r.readBool()
        let n = try r.readCount()
        types = []
        for _ in 0 ..< n { types.append(try r.readEnum()) }
    }
}

extension RoomCommand: BinaryCodable {
    /// Tags are the wire format: never renumber, only append.
    public func encode(to w: inout ByteWriter) {
        switch self {
        case .createRoom(let p): w.write(UInt8(1)); w.write(p)
        case .updateRoom(let p): w.write(UInt8(2)); w.write(p)
        case .closeRoom(let id, let ext): w.write(UInt8(3)); w.write(id); w.write(ext)
        case .reopenRoom(let id): w.write(UInt8(4)); w.write(id)
        case .setRoomPolicy(let p): w.write(UInt8(5)); w.write(p)
        case .setAppPolicy(let p): w.write(UInt8(6)); w.write(p)
        case .fetchRoomInfo(let id): w.write(UInt8(7)); w.write(id)
        // A plain enter keeps its first encoding (tag 8), so nodes that predate C5 still read it.
        case .enter(let p) where p.replacing.isEmpty: w.write(UInt8(8)); w.write(p)
        case .enter(let p): w.write(UInt8(38)); w.write(p); w.write(p.replacing)
        case .exit(let id): w.write(UInt8(9)); w.write(id)
        case .sessionLost(let edge): w.write(UInt8(10)); w.write(edge)
        // A message of normal priority keeps its first encoding (tag 11); another priority is tag 40, written only
        // once every node reads it (D3, `PeerProtocol.Feature.messagePriority`).
        case .sendMessage(let p) where p.priority == .normal: w.write(UInt8(11)); w.write(p)
        case .sendMessage(let p): w.write(UInt8(40)); w.write(p); w.write(p.priority.rawValue)
        case .fetchHistory(let p): w.write(UInt8(12)); w.write(p)
        case .fetchMembers(let p): w.write(UInt8(13)); w.write(p)
        case .fetchMembersByIds(let p): w.write(UInt8(14)); w.write(p)
        case .updateMyMemberInfo(let p): w.write(UInt8(15)); w.write(p)
        case .markManager(let p): w.write(UInt8(16)); w.write(p)
        case .markCommon(let p): w.write(UInt8(17)); w.write(p)
        case .setBlocked(let p): w.write(UInt8(18)); w.write(p)
        case .setMuted(let p): w.write(UInt8(19)); w.write(p)
        case .setTempMute(let p): w.write(UInt8(20)); w.write(p)
        case .kick(let p): w.write(UInt8(21)); w.write(p)
        case .setRoomMute(let p): w.write(UInt8(22)); w.write(p)
        case .updateAllowlist(let p): w.write(UInt8(23)); w.write(p)
        case .setGlobalMute(let p): w.write(UInt8(24)); w.write(p)
        case .queueInit(let id, let size): w.write(UInt8(25)); w.write(id); w.write(size)
        case .queueOffer(let p): w.write(UInt8(26)); w.write(p)
        case .queueBatchUpdate(let p): w.write(UInt8(27)); w.write(p)
        case .queuePoll(let id, let key): w.write(UInt8(28)); w.write(id); w.write(key)
        case .queueList(let id): w.write(UInt8(29)); w.write(id)
        case .queueDrop(let id): w.write(UInt8(30)); w.write(id)
        case .historySince(let id, let after, let limit): w.write(UInt8(31)); w.write(id); w.write(after); w.write(limit)
        case .listRooms(let after, let limit): w.write(UInt8(32)); w.write(after); w.write(limit)
        case .claimRoomSlot(let id): w.write(UInt8(33)); w.write(id)
        case .releaseRoomSlot(let id): w.write(UInt8(34)); w.write(id)
        case .yieldRoom(let id): w.write(UInt8(35)); w.write(id)
        case .setScopedAppPolicy(let ns, let p): w.write(UInt8(36)); w.write(ns); w.write(p)
        case .setSendBudget(let ns, let b): w.write(UInt8(37)); w.write(ns); w.write(b)
        case .setHistoryWindow(let bytes): w.write(UInt8(39)); w.write(bytes)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        switch try r.readByte() {
        case 1: self = .createRoom(try r.read())
        case 2: self = .updateRoom(try r.read())
        case 3: self = .closeRoom(roomId: try r.readString(), ext: try r.readString())
        case 4: self = .reopenRoom(roomId: try r.readString())
        case 5: self = .setRoomPolicy(try r.read())
        case 6: self = .setAppPolicy(try r.read())
        case 7: self = .fetchRoomInfo(roomId: try r.readString())
        case 8: self = .enter(try r.read())
        case 9: self = .exit(roomId: try r.readString())
        case 10: self = .sessionLost(edgeId: try r.readString())
        case 11: self = .sendMessage(try r.read())
        case 12: self = .fetchHistory(try r.read())
        case 13: self = .fetchMembers(try r.read())
        case 14: self = .fetchMembersByIds(try r.read())
        case 15: self = .updateMyMemberInfo(try r.read())
        case 16: self = .markManager(try r.read())
        case 17: self = .markCommon(try r.read())
        case 18: self = .setBlocked(try r.read())
        case 19: self = .setMuted(try r.read())
        case 20: self = .setTempMute(try r.read())
        case 21: self = .kick(try r.read())
        case 22: self = .setRoomMute(try r.read())
        case 23: self = .updateAllowlist(try r.read())
        case 24: self = .setGlobalMute(try r.read())
        case 25: self = .queueInit(roomId: try r.readString(), maxSize: try r.readInt())
        case 26: self = .queueOffer(try r.read())
        case 27: self = .queueBatchUpdate(try r.read())
        case 28: self = .queuePoll(roomId: try r.readString(), key: try r.readString())
        case 29: self = .queueList(roomId: try r.readString())
        case 30: self = .queueDrop(roomId: try r.readString())
        case 31: self = .historySince(roomId: try r.readString(), afterSeq: try r.readUInt64(), limit: try r.readInt())
        case 32: self = .listRooms(after: try r.readString(), limit: try r.readInt())
        case 33: self = .claimRoomSlot(roomId: try r.readString())
        case 34: self = .releaseRoomSlot(roomId: try r.readString())
        case 35: self = .yieldRoom(roomId: try r.readString())
        case 36: self = .setScopedAppPolicy(namespace: try r.readString(), try r.read())
        case 37: self = .setSendBudget(namespace: try r.readString(), try r.read())
        case 39: self = .setHistoryWindow(bytes: try r.readInt())
        case 40:
            var m: SendMessage = try r.read()
            m.priority = try r.readEnum()
            guard m.priority != .normal else { throw .invalidValue("a send with its priority written out as normal") }
            self = .sendMessage(m)
        case 38:
            var e: EnterRoom = try r.read()
            e.replacing = try r.readString()
            guard !e.replacing.isEmpty else { throw .invalidValue("an enter replacing no session") }
            self = .enter(e)
        case let t: throw .badTag("RoomCommand", UInt64(t))
        }
    }
}
