import Foundation
import ParleyIM
import ParleyRooms
import Testing

/// Issue 38 item 7: docs/protocol.md is the complete reference of what the server sends a client — a client
/// written from it must be able to read every frame. These fail when the edge writes a field, an event or kind
/// name, or a number with a meaning (a team operation, an attachment key) that the page does not name.
@Suite struct ProtocolDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every `.swift` file of the edge, which writes every client frame (`JSONText`, `EventFrame`).
    static func edgeSources() throws -> [(name: String, text: String)] {
        let folder = root.appendingPathComponent("Sources/ParleyEdge")
        return try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }.sorted()
            .map { ($0, try String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8)) }
    }

    static func matches(_ pattern: String, in text: String) throws -> [String] {
        let regex = try NSRegularExpression(pattern: pattern)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap {
            Range($0.range(at: 1), in: text).map { String(text[$0]) }
        }
    }

    static func named(_ word: String, in doc: String) -> Bool {
        doc.range(of: "(^|[^A-Za-z0-9_])\(NSRegularExpression.escapedPattern(for: word))([^A-Za-z0-9_]|$)",
                  options: .regularExpression) != nil
    }

    /// Only the server API receives these (docs/api.md names them), never a WebSocket client.
    static let appServerOnly: Set<String> = ["roomIds"]

    @Test("every field name, event name and kind the edge writes is named in docs/protocol.md")
    func everyWrittenNameIsDocumented() throws {
        let doc = try Self.text("docs/protocol.md")
        let api = try Self.text("docs/api.md")
        var names: [String: String] = [:]  // name → the file that writes it
        for (file, source) in try Self.edgeSources() {
            // `field("name", …)` / `key("name")`, and the value of a `kind` or `event` field, in any file;
            var found = try Self.matches(#"(?:^|[^A-Za-z])(?:field|key)\("([A-Za-z][A-Za-z0-9_]*)""#, in: source)
                + Self.matches(#"field\("(?:kind|event)", "([A-Za-z][A-Za-z0-9_]*)""#, in: source)
                + Self.matches(#""(?:event|kind)":"([A-Za-z][A-Za-z0-9_]*)""#, in: source)
            // the names the frame writers give enum values (`protocolName`: event kinds, roles, message types).
            if file.hasPrefix("JSONText") || file.hasPrefix("EventFrame") {
                found += try Self.matches(#"return "([A-Za-z][A-Za-z0-9_]*)""#, in: source)
            }
            for name in found where names[name] == nil { names[name] = file }
        }
        #expect(names.count > 100, "the scan found \(names.count) names: the edge's writers moved?")
        for (name, file) in names.sorted(by: { $0.key < $1.key }) {
            if Self.appServerOnly.contains(name) {
                #expect(Self.named(name, in: api), "\(name) (\(file)) is in no docs page")
            } else {
                #expect(Self.named(name, in: doc), "\(file) writes \"\(name)\", which docs/protocol.md does not name")
            }
        }
    }

    /// A number and the name the code gives it, as the page spells it ("5 ApplyPass", "1 application
    /// rejected"): compared lowercased, without spaces, not preceded by another digit.
    static func pairs<E: CaseIterable & RawRepresentable>(_: E.Type) -> [(Int, String)] where E.RawValue: BinaryInteger {
        E.allCases.map { (Int($0.rawValue), "\($0)".lowercased()) }
    }

    @Test("every number with a meaning the edge writes — notification types, kick reasons, ban types, queue levels, team operations, attachment keys, team notices, friend operations — is named")
    func everyNumberIsDocumented() throws {
        let doc = try Self.text("docs/protocol.md").lowercased().replacingOccurrences(of: " ", with: "")
            .replacingOccurrences(of: "\n", with: "")
        let rooms = Self.pairs(NotificationType.self) + Self.pairs(KickReason.self) + Self.pairs(BanType.self)
            + Self.pairs(QueueModificationLevel.self)
        let im = Self.pairs(TeamOperation.self) + Self.pairs(TeamUpdateTag.self) + Self.pairs(TeamNotice.self)
            + Self.pairs(FriendOperation.self)
        let all = rooms + im
        #expect(all.count == 20 + 4 + 8 + 2 + 11 + 10 + 4 + 4)
        for (number, name) in all {
            #expect(doc.range(of: "(^|[^0-9])\(number)\(name)", options: .regularExpression) != nil,
                    "docs/protocol.md does not say what \(number) (\(name)) means")
        }
    }
}
