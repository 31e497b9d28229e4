/// A small JSON writer for the frames the edge sends. Hand-written because every event is encoded once per
/// edge and the bytes are shared by every local session, so the encoder sits on the fan-out path; it writes
/// straight into one UTF-8 buffer with no intermediate dictionaries.
public struct JSONText: Sendable {
    public private(set) var bytes: [UInt8] = []
    private var needsComma: [Bool] = []

    public init() {
        bytes.reserveCapacity(256)
    }

    public var string: String { String(decoding: bytes, as: UTF8.self) }

    // MARK: structure

    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma.append(false)
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma.removeLast()
    }

    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma.append(false)
    }

    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma.removeLast()
    }

    /// Writes `"name":` inside an object; the value written next belongs to it.
    public mutating func key(_ name: String) {
        separate()
        writeQuoted(name)
        bytes.append(UInt8(ascii: ":"))
        // The value that follows belongs to this key and gets no comma of its own.
        afterKey = true
    }

    private var afterKey = false

    private mutating func separate() {
        if afterKey {
            afterKey = false
            return
        }
        if let last = needsComma.last {
            if last { bytes.append(UInt8(ascii: ",")) }
            needsComma[needsComma.count - 1] = true
        }
    }

    // MARK: values

    public mutating func value(_ s: String) {
        separate()
        writeQuoted(s)
    }

    public mutating func value(_ i: Int64) {
        separate()
        bytes.append(contentsOf: String(i).utf8)
    }

    public mutating func value(_ i: Int) { value(Int64(i)) }

    public mutating func value(_ u: UInt64) {
        separate()
        bytes.append(contentsOf: String(u).utf8)
    }

    public mutating func value(_ b: Bool) {
        separate()
        bytes.append(contentsOf: (b ? "true" : "false").utf8)
    }

    public mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
    }

    /// Inserts already-encoded JSON (a value encoded once and reused).
    public mutating func raw(_ json: [UInt8]) {
        separate()
        bytes.append(contentsOf: json)
    }

    public mutating func field(_ name: String, _ s: String) { key(name); value(s) }
    public mutating func field(_ name: String, _ i: Int64) { key(name); value(i) }
    public mutating func field(_ name: String, _ i: Int) { key(name); value(i) }
    public mutating func field(_ name: String, _ u: UInt64) { key(name); value(u) }
    public mutating func field(_ name: String, _ b: Bool) { key(name); value(b) }

    public mutating func field(_ name: String, strings: [String]) {
        key(name)
        beginArray()
        for s in strings { value(s) }
        endArray()
    }

    private mutating func writeQuoted(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [92, 92])
            case 0x0A: bytes.append(contentsOf: [92, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [92, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [92, UInt8(ascii: "t")])
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(b >> 4)], hex[Int(b & 15)]])
            default: bytes.append(b)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
