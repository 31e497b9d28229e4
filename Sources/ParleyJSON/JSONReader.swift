/// Reads one JSON text into a `JSONValue` in a single pass over its UTF-8 bytes.
///
/// Why not `JSONDecoder`: every client frame is parsed, and decoding `JSONValue` through `Decodable` tries Bool,
/// Int64, Double and String on every scalar, each failed try throwing an error — the parse was about half of a
/// client event loop's work under load (issue 35, docs/benchmarks.md). This reader accepts exactly what
/// Foundation's `JSONDecoder` accepted for `JSONValue` (`JSONReaderTests` compares the two), quirks included:
/// a trailing comma in an array or object, a leading byte-order mark, the first of duplicate keys, integral
/// numbers as integers (`1.0`, `1e2`), nesting up to 512. One difference, on purpose: a number with a fraction or
/// an exponent of magnitude 2^53 or more is a double (JSONDecoder made some of them integers through `Decimal`).
struct JSONReader {
    static let maxDepth = 512

    private let bytes: UnsafeBufferPointer<UInt8>
    private var at = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// The value of a whole text; nil when it is not exactly one JSON value (surrounded by whitespace).
    static func read(_ text: String) -> JSONValue? {
        var text = text
        return text.withUTF8 { buffer in
            var reader = JSONReader(buffer)
            reader.skipByteOrderMark()
            guard let value = reader.value(depth: 0) else { return nil }
            reader.skipWhitespace()
            return reader.at == buffer.count ? value : nil
        }
    }

    private var current: UInt8? { at < bytes.count ? bytes[at] : nil }

    private mutating func skipByteOrderMark() {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { at = 3 }
    }

    private mutating func skipWhitespace() {
        while let b = current, b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { at += 1 }
    }

    private mutating func value(depth: Int) -> JSONValue? {
        skipWhitespace()
        guard let b = current else { return nil }
        switch b {
        case UInt8(ascii: "{"): return object(depth: depth + 1)
        case UInt8(ascii: "["): return array(depth: depth + 1)
        case UInt8(ascii: "\""): return string().map(JSONValue.string)
        case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
        case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
        case UInt8(ascii: "n"): return literal("null") ? .null : nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
        default: return nil
        }
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard at + count <= bytes.count else { return false }
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: count)
        for i in 0..<count where bytes[at + i] != expected[i] { return false }
        at += count
        return true
    }

    private mutating func array(depth: Int) -> JSONValue? {
        guard depth <= Self.maxDepth else { return nil }
        at += 1  // [
        var items: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") { at += 1; return .array(items) }
        while true {
            guard let item = value(depth: depth) else { return nil }
            items.append(item)
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                at += 1
                skipWhitespace()
                if current == UInt8(ascii: "]") { at += 1; return .array(items) }  // JSONDecoder's trailing comma
            case UInt8(ascii: "]"):
                at += 1
                return .array(items)
            default:
                return nil
            }
        }
    }

    private mutating func object(depth: Int) -> JSONValue? {
        guard depth <= Self.maxDepth else { return nil }
        at += 1  // {
        var fields: [String: JSONValue] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") { at += 1; return .object(fields) }
        while true {
            guard current == UInt8(ascii: "\""), let key = string() else { return nil }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { return nil }
            at += 1
            guard let item = value(depth: depth) else { return nil }
            if fields[key] == nil { fields[key] = item }  // the first of duplicate keys, as JSONDecoder kept
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","):
                at += 1
                skipWhitespace()
                if current == UInt8(ascii: "}") { at += 1; return .object(fields) }
            case UInt8(ascii: "}"):
                at += 1
                return .object(fields)
            default:
                return nil
            }
        }
    }

    /// A string starting at its opening quote.
    private mutating func string() -> String? {
        at += 1  // "
        let start = at
        // Most strings have no escape: one scan, one copy.
        while let b = current, b != UInt8(ascii: "\""), b != UInt8(ascii: "\\") {
            guard b >= 0x20 else { return nil }
            at += 1
        }
        guard let stop = current else { return nil }
        if stop == UInt8(ascii: "\"") {
            at += 1
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<(at - 1)]), as: UTF8.self)
        }
        var out = Array(bytes[start..<at])
        while let b = current {
            switch b {
            case UInt8(ascii: "\""):
                at += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                at += 1
                guard let escaped = current else { return nil }
                at += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escaped)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    guard let scalar = unicodeEscape() else { return nil }
                    out.append(contentsOf: String(Character(scalar)).utf8)
                default: return nil
                }
            case 0..<0x20:
                return nil
            default:
                out.append(b)
                at += 1
            }
        }
        return nil
    }

    /// The scalar of a `\u` escape (after the `u`), joining a surrogate pair; a lone surrogate is an error.
    private mutating func unicodeEscape() -> Unicode.Scalar? {
        guard let first = hex4() else { return nil }
        switch first {
        case 0xD800...0xDBFF:
            guard at + 2 <= bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") else { return nil }
            at += 2
            guard let second = hex4(), (0xDC00...0xDFFF).contains(second) else { return nil }
            return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
        case 0xDC00...0xDFFF:
            return nil
        default:
            return Unicode.Scalar(first)
        }
    }

    private mutating func hex4() -> UInt32? {
        guard at + 4 <= bytes.count else { return nil }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[at]
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: return nil
            }
            v = v << 4 | UInt32(digit)
            at += 1
        }
        return v
    }

    /// RFC 8259's number grammar; an integer literal is `.int` when it fits (else `.double`), a number with a
    /// fraction or exponent goes through `Double` and is `.int` when that is integral and below 2^53 (JSONDecoder
    /// read `1.0` and `1e2` as Int64).
    private mutating func number() -> JSONValue? {
        let start = at
        if current == UInt8(ascii: "-") { at += 1 }
        guard let lead = current, lead >= UInt8(ascii: "0"), lead <= UInt8(ascii: "9") else { return nil }
        at += 1
        if lead != UInt8(ascii: "0") { skipDigits() }
        var integral = true
        if current == UInt8(ascii: ".") {
            at += 1
            guard skipDigits() > 0 else { return nil }
            integral = false
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            at += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { at += 1 }
            guard skipDigits() > 0 else { return nil }
            integral = false
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
        guard let d = Double(text), d.isFinite else { return nil }
        if integral {
            // An integer literal past Int64 stays a double, even where the double is Int64.min.
            return Int64(text).map(JSONValue.int) ?? .double(d)
        }
        // Below 2^53 a double is exact; from there JSONDecoder re-read the text as a Decimal, which this does not:
        // such a number with a fraction or exponent is a double here (no protocol field is one).
        guard d.magnitude < 9_007_199_254_740_992 else { return .double(d) }
        return Int64(exactly: d).map(JSONValue.int) ?? .double(d)
    }

    @discardableResult
    private mutating func skipDigits() -> Int {
        let start = at
        while let b = current, b >= UInt8(ascii: "0"), b <= UInt8(ascii: "9") { at += 1 }
        return at - start
    }
}
