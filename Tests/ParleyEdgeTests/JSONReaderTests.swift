import Foundation
import ParleyJSON
import ParleyRaft
import Testing

/// The edge parses every client frame with `JSONValue.parse` (`JSONReader`), which replaced Foundation's
/// `JSONDecoder` for speed (issue 35): it must read every text exactly as `JSONDecoder` did — the same value,
/// or a refusal where that refused (docs/protocol.md: a frame that is not JSON is 4000; a field of the wrong JSON
/// type is 414, so integers, doubles, booleans and strings must come out the same).
@Suite struct JSONReaderTests {
    func agree(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(JSONValue.parse(text) == JSONValue.parseWithFoundation(text), "\(text.debugDescription)",
                sourceLocation: sourceLocation)
    }

    @Test("numbers: integers, integral doubles as integers, the Int64 edges, overflow refused")
    func numbers() {
        for text in ["0", "1", "-0", "-0.0", "1.0", "1e2", "1E+2", "2.5e1", "0.1e1", "1.5", "-1.25", "1e-400", "1e308",
                     "1e400", "1E400", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
                     "-9223372036854775809", "9007199254740991.0", "-9.007199254740991e15", "123456789012345678901234567890", "3.0000000000000001", "01", "-", "+1",
                     ".5", "1.", "1e", "1e+", "-01", "00", "NaN", "Infinity", "-Infinity", "0x10", "1_000"] {
            agree(text)
        }
        #expect(JSONValue.parse("1.0") == .int(1))
        #expect(JSONValue.parse("1.5") == .double(1.5))
        #expect(JSONValue.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(JSONValue.parse("1e400") == nil)
        // The one difference from JSONDecoder (which re-read these through Decimal): doubles past 2^53.
        #expect(JSONValue.parse("9007199254740993.0") == .double(9_007_199_254_740_992))
        #expect(JSONValue.parse("-92233720368547758070e-1") == .double(-9_223_372_036_854_775_807))
    }

    @Test("strings: escapes, surrogate pairs, lone surrogates and control characters refused")
    func strings() {
        for text in [#""""#, #""abc""#, #""a\u0000b""#, #""\ud83d\ude00""#, #""\ud83d""#, #""\ude00x""#, "\"a\u{01}b\"",
                     "\"a\u{7f}b\"", #""\x""#, #""\/""#, #""\"\\\b\f\n\r\t""#, #""\u12""#, #""\uD800\u0041""#,
                     #""\u00e9t\u00C9""#, "\"été 😀 中文\"", #""abc"#, #""a\"#, "\"tab\there\""] {
            agree(text)
        }
        #expect(JSONValue.parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(JSONValue.parse(#""\ud83d""#) == nil)
    }

    @Test("structure: whitespace, trailing commas, duplicate keys, garbage after the value, byte-order mark")
    func structure() {
        for text in ["", "  ", "null", "nul", "true", "false", "tru", "true false", "[true]x", " [1, 2 ] ", "[1,]", "[,]",
                     "[1,,2]", "{\"a\":1,}", "{,}", "{\"a\":1,\"a\":2}", "{\"a\"}", "{\"a\" 1}", "{a:1}", "[", "]", "{",
                     "[1 2]", "\t{\n\"k\"\r: null }", "\u{feff}1", "\u{feff}", "1\u{feff}", "{\"a\":[{\"b\":[]}],\"c\":{}}",
                     "[1]\n", "\u{0b}1", "{\"op\":\"sendMessage\",\"id\":7,\"roomId\":\"r\",\"msg\":{\"type\":0,\"text\":\"hi\"}}"] {
            agree(text)
        }
        #expect(JSONValue.parse("{\"a\":1,\"a\":2}") == .object(["a": 1]))
    }

    @Test("nesting: 512 levels read, 513 refused (a frame cannot overflow the stack)")
    func nesting() {
        for depth in [511, 512, 513, 600] {
            agree(String(repeating: "[", count: depth) + String(repeating: "]", count: depth))
            agree(String(repeating: "{\"a\":", count: depth) + "1" + String(repeating: "}", count: depth))
        }
        #expect(JSONValue.parse(String(repeating: "[", count: 512) + String(repeating: "]", count: 512)) != nil)
        #expect(JSONValue.parse(String(repeating: "[", count: 513) + String(repeating: "]", count: 513)) == nil)
    }

    @Test("random texts made of JSON's pieces, and random mutations of real frames, read as JSONDecoder reads them")
    func randomTexts() {
        var rng = SplitMix64(seed: 35)  // a failing text is found again from the seed
        let pieces = ["{", "}", "[", "]", ",", ":", " ", "\"", "\"k\"", "\"v\\n\"", "\\u00e9", "\\ud83d", "\\ude00", "1",
                      "-", "0", ".", "5", "e", "E+", "true", "false", "null", "nul", "\u{01}", "é", "😀", "\\", "\t"]
        for _ in 0..<4_000 {
            var text = ""
            for _ in 0..<Int(rng.nextUInt64() % 12) { text += pieces[Int(rng.nextUInt64() % UInt64(pieces.count))] }
            agree(text)
        }
        let frames = [#"{"op":"sendMessage","id":12,"roomId":"app:r1","msg":{"type":0,"text":"hello \"you\"","ext":"{\"a\":1}"}}"#,
                      #"{"op":"enter","id":1,"roomId":"r","auth":{"appKey":"a","token":"t","mode":1},"nick":"é😀","ext":null}"#,
                      #"{"op":"fetchHistory","id":3.0,"roomId":"r","limit":20,"reverse":true,"types":[0,1,2],"before":1e3}"#]
        for frame in frames {
            agree(frame)
            let bytes = Array(frame.unicodeScalars)
            for _ in 0..<1_500 {
                var mutated = bytes
                let at = Int(rng.nextUInt64() % UInt64(mutated.count))
                switch rng.nextUInt64() % 3 {
                case 0: mutated.remove(at: at)
                case 1: mutated.insert(Unicode.Scalar(UInt8(32 + rng.nextUInt64() % 95)), at: at)
                default: mutated[at] = Unicode.Scalar(UInt8(32 + rng.nextUInt64() % 95))
                }
                var text = ""
                text.unicodeScalars.append(contentsOf: mutated)
                agree(text)
            }
        }
    }
}
