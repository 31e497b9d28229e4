#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a byte buffer could not be decoded.
public enum CodecError: Error, Equatable, Sendable {
    case truncated
    case overlongVarint
    case invalidUTF8
    case badTag(String, UInt64)
    case badVersion(UInt8)
    case badMagic
    case trailingBytes(Int)
    case invalidValue(String)
}

/// Reads the form `ByteWriter` writes. Every read checks bounds, so garbage throws cleanly.
public struct ByteReader: Sendable {
    private let bytes: [UInt8]
    private var position = 0
    /// Where reading stops: the buffer's end, or the end of the value `readSpanning(_:)` reads.
    private var end: Int

    /// Reads `bytes` from the start.
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        end = bytes.count
    }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { position == end }
    /// Bytes not read yet.
    public var remaining: Int { end - position }

    /// One raw byte.
    public mutating func readByte() throws(CodecError) -> UInt8 {
        guard position < end else { throw .truncated }
        defer { position += 1 }
        return bytes[position]
    }

    /// A Bool written as 0 or 1; any other byte throws.
    public mutating func readBool() throws(CodecError) -> Bool {
        switch try readByte() {
        case 0: return false
        case 1: return true
        case let b: throw .badTag("Bool", UInt64(b))
        }
    }

    /// An optional Bool written as 0, 1 or 2 (nil).
    public mutating func readOptionalBool() throws(CodecError) -> Bool? {
        switch try readByte() {
        case 0: return false
        case 1: return true
        case 2: return nil
        case let b: throw .badTag("Bool?", UInt64(b))
        }
    }

    /// An unsigned LEB128 varint of at most ten bytes.
    public mutating func readUInt64() throws(CodecError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try readByte()
            if shift == 63 && b > 1 { throw .overlongVarint }
            result |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
            if shift > 63 { throw .overlongVarint }
        }
    }

    /// A signed zig-zag varint.
    public mutating func readInt64() throws(CodecError) -> Int64 {
        let raw = try readUInt64()
        return Int64(bitPattern: (raw >> 1) ^ (0 &- (raw & 1)))
    }

    /// A signed varint that must fit an Int.
    public mutating func readInt() throws(CodecError) -> Int {
        let v = try readInt64()
        guard let i = Int(exactly: v) else { throw .invalidValue("Int") }
        return i
    }

    /// A count of following items, each at least `minimumItemBytes` long, so a forged count
    /// can never make the decoder allocate more than the buffer could hold.
    public mutating func readCount(minimumItemBytes: Int = 1) throws(CodecError) -> Int {
        let n = try readUInt64()
        guard n <= UInt64(remaining / max(1, minimumItemBytes)) else { throw .truncated }
        return Int(n)
    }

    /// A length-prefixed string; invalid UTF-8 throws.
    public mutating func readString() throws(CodecError) -> String {
        let n = try readCount()
        let start = position
        position += n
        // `String(validating:as:)` runs the standard library's generic validator, which looks up type metadata
        // on every call (0.8 % of a node's samples under load, issue 35). Decoding repairs invalid UTF-8 (a
        // U+FFFD for each bad sequence), so the bytes come back unchanged exactly when they were valid.
        let s: String? = bytes.withUnsafeBufferPointer { all in
            let utf8 = UnsafeBufferPointer(rebasing: all[start ..< start + n])
            var s = String(decoding: utf8, as: UTF8.self)
            // `memcmp`, not `elementsEqual`: the generic comparison went byte by byte (1 % of a node's samples
            // at 1000 clients, session 40).
            return s.withUTF8 { $0.count == n && (n == 0 || memcmp($0.baseAddress!, utf8.baseAddress!, n) == 0) } ? s : nil
        }
        guard let s else { throw .invalidUTF8 }
        return s
    }

    /// Raw bytes written by `ByteWriter.write(bytes:)`.
    public mutating func readBytes() throws(CodecError) -> [UInt8] {
        let n = try readCount()
        defer { position += n }
        return Array(bytes[position ..< position + n])
    }

    /// A value `ByteWriter.write(bytes:)` wrote in its encoded form, read in place: it reads as if its bytes
    /// were all there is (a value whose last field is there only when written — a request's key — reads to
    /// their end) and must use every one of them.
    public mutating func readSpanning<T: BinaryCodable>(_: T.Type = T.self) throws(CodecError) -> T {
        let n = try readCount()
        let outer = end
        end = position + n
        let value: T
        do { value = try T(from: &self) } catch { end = outer; throw error }
        guard position == end else { defer { end = outer }; throw .trailingBytes(end - position) }
        end = outer
        return value
    }

    /// Skips what `ByteWriter.write(bytes:)` wrote, without copying it.
    public mutating func skipBytes() throws(CodecError) {
        position += try readCount()
    }

    /// A presence byte, then a string when present.
    /// What `ByteWriter.write(optional:)` wrote.
    public mutating func readOptionalInt() throws(CodecError) -> Int? {
        try readBool() ? try readInt() : nil
    }

    public mutating func readOptionalString() throws(CodecError) -> String? {
        try readBool() ? try readString() : nil
    }

    /// A counted list of strings.
    public mutating func readStrings() throws(CodecError) -> [String] {
        let n = try readCount()
        var out: [String] = []
        out.reserveCapacity(n)
        for _ in 0 ..< n { out.append(try readString()) }
        return out
    }

    /// A nested value.
    @inlinable public mutating func read<T: BinaryCodable>(_: T.Type = T.self) throws(CodecError) -> T {
        try T(from: &self)
    }

    /// A counted list of values.
    @inlinable public mutating func readArray<T: BinaryCodable>(_: T.Type = T.self) throws(CodecError) -> [T] {
        let n = try readCount()
        var out: [T] = []
        out.reserveCapacity(n)
        for _ in 0 ..< n { out.append(try T(from: &self)) }
        return out
    }

    /// A presence byte, then a value when present.
    @inlinable public mutating func readOptional<T: BinaryCodable>(_: T.Type = T.self) throws(CodecError) -> T? {
        try readBool() ? try T(from: &self) : nil
    }

    /// A raw-value enum stored as one byte.
    @inlinable public mutating func readEnum<T: RawRepresentable>(_: T.Type = T.self) throws(CodecError) -> T
    where T.RawValue == UInt8 {
        let b = try readByte()
        guard let v = T(rawValue: b) else { throw .badTag(String(describing: T.self), UInt64(b)) }
        return v
    }

    /// A raw-value enum stored as a varint of at most 16 bits.
    @inlinable public mutating func readEnum16<T: RawRepresentable>(_: T.Type = T.self) throws(CodecError) -> T
    where T.RawValue == UInt16 {
        let raw = try readUInt64()
        guard raw <= UInt64(UInt16.max), let v = T(rawValue: UInt16(raw)) else {
            throw .badTag(String(describing: T.self), raw)
        }
        return v
    }
}
