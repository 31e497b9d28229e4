import NIOCore

/// The framing of both long-lived peer streams (Raft batches, RPC calls and answers): a 4-byte big-endian
/// length, then that many bytes.
enum FrameRead {
    case frame(ByteBuffer)
    /// The buffer does not yet hold the whole next frame.
    case incomplete
    /// The next frame announces more than the limit allows.
    case oversized(UInt32)
}

extension ByteBuffer {
    /// Takes the next whole frame's payload off the front of the buffer.
    mutating func readLengthPrefixedFrame(maxBytes: Int) -> FrameRead {
        guard let length = getInteger(at: readerIndex, as: UInt32.self) else { return .incomplete }
        guard Int(length) <= maxBytes else { return .oversized(length) }
        guard readableBytes >= 4 + Int(length) else { return .incomplete }
        moveReaderIndex(forwardBy: 4)
        return .frame(readSlice(length: Int(length))!)
    }

    /// A frame whose payload `fill` writes; the length is set afterwards.
    static func lengthPrefixedFrame(capacity: Int, _ fill: (inout ByteBuffer) -> Void) -> ByteBuffer {
        var frame = ByteBuffer()
        frame.reserveCapacity(4 + capacity)
        frame.writeLengthPrefixedFrame(fill)
        return frame
    }

    /// Appends one frame whose payload `fill` writes (several frames may share a buffer, and a DATA frame).
    mutating func writeLengthPrefixedFrame(_ fill: (inout ByteBuffer) -> Void) {
        let start = writerIndex
        writeInteger(UInt32(0))
        fill(&self)
        setInteger(UInt32(writerIndex - start - 4), at: start)
    }
}
