import ParleyRaft
import ParleyWire

/// The binary form of Raft messages between nodes: a batch of (group, message) envelopes, written with the
/// project's one codec (`ByteWriter` / `ByteReader`). Decoding garbage throws; it never traps.
public enum RaftWireCodec {
    public static let version: UInt8 = 1

    public static func encode(_ batch: [RaftEnvelope]) -> [UInt8] {
        var w = ByteWriter(capacity: 64 + batch.reduce(0) { $0 + $1.message.byteSize })
        w.write(version)
        w.write(UInt64(batch.count))
        for envelope in batch {
            w.write(envelope.group)
            encode(envelope.message, into: &w)
        }
        return w.bytes
    }

    public static func decode(_ bytes: [UInt8]) throws(CodecError) -> [RaftEnvelope] {
        var r = ByteReader(bytes)
        let v = try r.readByte()
        guard v == version else { throw .badVersion(v) }
        let count = try r.readCount(minimumItemBytes: 8)
        var batch: [RaftEnvelope] = []
        batch.reserveCapacity(count)
        for _ in 0..<count {
            let group = try r.readUInt64()
            batch.append(RaftEnvelope(group: group, message: try decodeMessage(&r)))
        }
        guard r.isAtEnd else { throw .trailingBytes(r.remaining) }
        return batch
    }

    static func encode(_ m: Message, into w: inout ByteWriter) {
        w.write(m.kind.rawValue)
        w.write(m.from)
        w.write(m.to)
        w.write(m.term)
        w.write(m.logTerm)
        w.write(m.index)
        w.write(m.commit)
        w.write(m.rejectHint)
        // One byte of flags keeps the common message short.
        var flags: UInt8 = 0
        if m.reject { flags |= 1 }
        if m.quiesce { flags |= 2 }
        if m.campaignTransfer { flags |= 4 }
        if m.snapshot != nil { flags |= 8 }
        w.write(flags)
        w.write(m.transferee)
        w.write(bytes: m.context)
        w.write(UInt64(m.entries.count))
        for e in m.entries {
            w.write(e.term)
            w.write(e.index)
            w.write(e.kind.rawValue)
            w.write(bytes: e.data)
        }
        if let s = m.snapshot {
            w.write(s.metadata.index)
            w.write(s.metadata.term)
            w.write(s.metadata.confState)
            w.write(bytes: s.data)
            w.write(m.snapshotOffset)
            w.write(m.snapshotTotalBytes)
        } else if m.kind == .snapshotResponse {
            w.write(m.snapshotOffset)
        }
    }

    static func decodeMessage(_ r: inout ByteReader) throws(CodecError) -> Message {
        let kind: MessageKind = try r.readEnum()
        var m = Message(kind: kind, from: try r.readUInt64(), to: try r.readUInt64(), term: try r.readUInt64(),
                        logTerm: try r.readUInt64(), index: try r.readUInt64(), commit: try r.readUInt64(),
                        rejectHint: try r.readUInt64())
        let flags = try r.readByte()
        guard flags & ~0x0F == 0 else { throw .invalidValue("message flags") }
        m.reject = flags & 1 != 0
        m.quiesce = flags & 2 != 0
        m.campaignTransfer = flags & 4 != 0
        m.transferee = try r.readUInt64()
        m.context = try r.readBytes()
        let count = try r.readCount(minimumItemBytes: 4)
        m.entries.reserveCapacity(count)
        for _ in 0..<count {
            let term = try r.readUInt64(), index = try r.readUInt64()
            let kind: EntryKind = try r.readEnum()
            m.entries.append(Entry(term: term, index: index, kind: kind, data: try r.readBytes()))
        }
        if flags & 8 != 0 {
            let index = try r.readUInt64(), term = try r.readUInt64()
            let cs = try r.read(ConfState.self)
            m.snapshot = Snapshot(metadata: SnapshotMetadata(index: index, term: term, confState: cs), data: try r.readBytes())
            m.snapshotOffset = try r.readUInt64()
            m.snapshotTotalBytes = try r.readUInt64()
        } else if kind == .snapshotResponse {
            m.snapshotOffset = try r.readUInt64()
        }
        return m
    }
}
