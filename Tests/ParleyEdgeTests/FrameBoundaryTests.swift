@testable import ParleyEdge
import Testing

/// SPEC A2: `FrameDeadline` needs to know, from lengths alone, whether the client is inside a frame.
@Suite("Frame boundaries")
struct FrameBoundaryTests {
    /// A masked client frame whose header announces `length` bytes, with that many payload bytes.
    static func frame(length: Int) -> [UInt8] {
        var header: [UInt8] = [0x81]
        if length < 126 {
            header.append(0x80 | UInt8(length))
        } else if length <= 0xFFFF {
            header += [0x80 | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        } else {
            header.append(0x80 | 127)
            header += (0..<8).map { UInt8(truncatingIfNeeded: length >> (8 * (7 - $0))) }
        }
        return header + [9, 9, 9, 9] + Array(repeating: 0x41, count: length)
    }

    @Test("A2: every length form, cut at every byte, is inside a frame until its last byte and between frames after")
    func everyCut() {
        for length in [0, 1, 125, 126, 300, 65_535, 65_536, 70_000] {
            let bytes = Self.frame(length: length)
            for cut in [1, 2, 3, 5, 9, 13, bytes.count - 1] where cut < bytes.count {
                var boundary = FrameBoundary()
                let first = boundary.consume(bytes[..<cut])
                #expect(first.began == 1 && !first.finishedLast && boundary.insideFrame, "length \(length) cut \(cut)")
                let second = boundary.consume(bytes[cut...])
                #expect(second.began == 0 && second.finishedLast && !boundary.insideFrame, "length \(length) cut \(cut)")
            }
        }
    }

    @Test("A2: several frames in one read, the last one open, count as begun and keep the boundary inside")
    func framesInOneRead() {
        var boundary = FrameBoundary()
        let whole = Self.frame(length: 3) + Self.frame(length: 0) + Self.frame(length: 200)
        let open = Self.frame(length: 1 << 20)
        let read = boundary.consume(whole + open.prefix(20))
        #expect(read.began == 4 && !read.finishedLast)
        let rest = boundary.consume(open.dropFirst(20))
        #expect(rest.began == 0 && rest.finishedLast)
        // An unmasked frame (no mask key), as a server writes it, is read too.
        var plain = FrameBoundary()
        #expect(plain.consume([0x81, 2, 0x68, 0x69]).finishedLast)
    }
}
