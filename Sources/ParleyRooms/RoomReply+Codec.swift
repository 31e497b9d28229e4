import ParleyWire

/// Replies and errors travel from the shard leader back to the edge in the same binary form.

extension RoomInfoView: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(info)
        w.write(onlineUserCount)
        w.write(seq)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        info = try r.read()
        onlineUserCount = try r.readInt()
        seq = try r.readUInt64()
    }
}

extension MemberView: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(userId); w.write(roomNickname); w.write(roomAvatar); w.write(roomExt); w.write(type.rawValue)
        w.write(isMuted); w.write(isTempMuted); w.write(tempMuteDuration); w.write(isInBlackList); w.write(isOnline)
        w.write(enterTime); w.write(pageKey)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        userId = try r.readString()
        roomNickname = try r.readString()
        roomAvatar = try r.readString()
        roomExt = try r.readString()
        type = try r.readEnum()
        isMuted = try r.readBool()
        isTempMuted = try r.readBool()
        tempMuteDuration = try r.readUInt64()
        isInBlackList = try r.readBool()
        isOnline = try r.readBool()
        enterTime = try r.readInt64()
        pageKey = try r.readUInt64()
    }
}

extension EnterResult: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(room)
        w.write(member)
        w.write(authMode.rawValue)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        room = try r.read()
        member = try r.read()
        authMode = try r.readEnum()
    }
}

extension RoomReply: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        switch self {
        case .done: w.write(UInt8(0))
        case .roomInfo(let v): w.write(UInt8(1)); w.write(v)
        case .entered(let v): w.write(UInt8(2)); w.write(v)
        // The serverId is not in this form (peer protocol 6 and older read it so): `ApplyOutcome` carries it.
        case .messageSent(let seq, let time, _): w.write(UInt8(3)); w.write(seq); w.write(time)
        case .members(let v): w.write(UInt8(4)); w.write(v)
        case .queueElement(let v): w.write(UInt8(5)); w.write(v)
        case .queue(let v): w.write(UInt8(6)); w.write(v)
        case .keysNotFound(let v): w.write(UInt8(7)); w.write(v)
        case .history(let v): w.write(UInt8(8)); w.write(v)
        case .sessionsEnded(let n): w.write(UInt8(9)); w.write(n)
        case .roomIds(let ids): w.write(UInt8(10)); w.write(ids)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        switch try r.readByte() {
        case 0: self = .done
        case 1: self = .roomInfo(try r.read())
        case 2: self = .entered(try r.read())
        case 3: self = .messageSent(seq: try r.readUInt64(), time: try r.readInt64(), serverId: 0)
        case 4: self = .members(try r.readArray())
        case 5: self = .queueElement(try r.read())
        case 6: self = .queue(try r.readArray())
        case 7: self = .keysNotFound(try r.readStrings())
        case 8: self = .history(try r.readArray())
        case 9: self = .sessionsEnded(try r.readInt())
        case 10: self = .roomIds(try r.readStrings())
        case let t: throw .badTag("RoomReply", UInt64(t))
        }
    }
}

extension RoomError: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(code.rawValue)
        w.write(message)
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        let raw = try r.readInt()
        guard let code = RoomErrorCode(rawValue: raw) else { throw .badTag("RoomErrorCode", UInt64(bitPattern: Int64(raw))) }
        self.init(code, try r.readString())
    }
}

/// Two forms. Tags 0 and 1 (every version): the result, then every event the command caused — a message's
/// answer carried the whole message back, its serverId read from there. Tag 2 (peer protocol 7, `compact`):
/// a success with the message's serverId beside the reply, and no events for a message (the answer needs its
/// ids only; the room's members get the message from the shard's feed) — issue 34.
extension ApplyOutcome: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        switch result {
        case .success(let reply): w.write(UInt8(0)); w.write(reply)
        case .failure(let error): w.write(UInt8(1)); w.write(error)
        }
        w.write(events)
    }

    /// The compact form (tag 2) of a success; a failure is written as always.
    public func encodeCompact(to w: inout ByteWriter) {
        guard case .success(let reply) = result else { return encode(to: &w) }
        w.write(UInt8(2))
        w.write(reply)
        if case .messageSent(_, _, let serverId) = reply {
            w.write(serverId)
            w.write([RoomEvent]())
        } else {
            w.write(UInt64(0))
            w.write(events)
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        switch try r.readByte() {
        case 0:
            let reply = try r.read(RoomReply.self)
            events = try r.readArray()
            // The older form: a message's serverId is its event's.
            if case .messageSent(_, _, 0) = reply, let serverId = events.lazy.compactMap({ e -> UInt64? in
                if case .message(let m) = e.kind { return m.serverId }
                return nil
            }).first {
                result = .success(reply.withServerId(serverId))
            } else {
                result = .success(reply)
            }
        case 1:
            result = .failure(try r.read())
            events = try r.readArray()
        case 2:
            let reply = try r.read(RoomReply.self)
            let serverId = try r.readUInt64()
            events = try r.readArray()
            result = .success(reply.withServerId(serverId))
        case let t: throw .badTag("ApplyOutcome", UInt64(t))
        }
    }
}

extension RoomReply {
    /// A `messageSent` read in the form without its serverId, given it; any other reply as it is.
    func withServerId(_ serverId: UInt64) -> RoomReply {
        guard case .messageSent(let seq, let time, 0) = self else { return self }
        return .messageSent(seq: seq, time: time, serverId: serverId)
    }
}
