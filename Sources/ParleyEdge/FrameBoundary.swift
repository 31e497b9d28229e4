/// Where a client's byte stream stands against RFC 6455 framing: between frames, inside a frame's header, or
/// inside its payload. It reads only lengths (2-14 header bytes, then skips the payload), so the edge can tell
/// a frame that is taking too long (`FrameDeadline`) without decoding anything.
struct FrameBoundary: Equatable {
    /// Header bytes of the frame being read (empty between frames and once the header is whole).
    private var header: [UInt8] = []
    /// Payload bytes of the current frame still to come.
    private var payloadLeft: UInt64 = 0

    /// Whether a frame has begun and not yet ended.
    var insideFrame: Bool { !header.isEmpty || payloadLeft > 0 }

    /// Takes `bytes`; returns how many frames began in them (a frame still open at the end counts once).
    /// `finishedLast` tells whether the stream ends between frames.
    @discardableResult
    mutating func consume<Bytes: Collection>(_ bytes: Bytes) -> (began: Int, finishedLast: Bool) where Bytes.Element == UInt8 {
        var began = 0
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if payloadLeft > 0 {
                let step = Int(min(payloadLeft, UInt64(bytes.distance(from: index, to: bytes.endIndex))))
                payloadLeft -= UInt64(step)
                index = bytes.index(index, offsetBy: step)
                continue
            }
            if header.isEmpty { began += 1 }
            header.append(bytes[index])
            index = bytes.index(after: index)
            if let length = Self.payloadLength(header) {
                header.removeAll(keepingCapacity: true)
                payloadLeft = length
            }
        }
        return (began, !insideFrame)
    }

    /// The payload length once `header` is whole, nil while it needs more bytes.
    static func payloadLength(_ header: [UInt8]) -> UInt64? {
        guard header.count >= 2 else { return nil }
        let masked = header[1] & 0x80 != 0
        let short = header[1] & 0x7F
        let lengthBytes = short == 126 ? 2 : short == 127 ? 8 : 0
        guard header.count == 2 + lengthBytes + (masked ? 4 : 0) else { return nil }
        guard lengthBytes > 0 else { return UInt64(short) }
        return header[2..<(2 + lengthBytes)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }
}
