import ParleyRaft
import ParleyWire

/// A membership in the project's one binary form; the database keeps it as a blob and the transport
/// sends it inside snapshots.
extension ConfState: BinaryCodable {
    public func encode(to w: inout ByteWriter) {
        w.write(autoLeave)
        for list in [voters, votersOutgoing, learners, learnersNext] {
            w.write(UInt64(list.count))
            for id in list { w.write(id) }
        }
    }

    public init(from r: inout ByteReader) throws(CodecError) {
        let autoLeave = try r.readBool()
        var lists: [[NodeID]] = []
        for _ in 0..<4 {
            let count = try r.readCount()
            var list: [NodeID] = []
            list.reserveCapacity(count)
            for _ in 0..<count { list.append(try r.readUInt64()) }
            lists.append(list)
        }
        self.init(voters: lists[0], votersOutgoing: lists[1], learners: lists[2], learnersNext: lists[3],
                  autoLeave: autoLeave)
    }
}
