import Foundation
import Testing
import ParleyAPI
import ParleyIM
import ParleyCluster
import ParleyRooms
import ParleyPlacement

/// docs/openapi.yaml stays true: its paths are exactly the router's, and its error codes are exactly the
/// codes the API can answer with, each with the HTTP status the code maps to. A line scan, since the file's
/// layout is fixed (paths at two spaces under `paths:`, error codes as `- code:` / `status:` pairs).
@Suite struct OpenAPIDocumentTests {
    static let document: String = {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/openapi.yaml")
        return (try? String(contentsOf: docs, encoding: .utf8)) ?? ""
    }()

    static var lines: [Substring] { document.split(separator: "\n", omittingEmptySubsequences: false) }

    @Test func documentedPathsAreExactlyTheRoutersPaths() {
        var inPaths = false
        var documented: [String] = []
        for line in Self.lines {
            if line == "paths:" { inPaths = true; continue }
            if inPaths, let first = line.first, first != " " { break }
            if inPaths, line.hasPrefix("  /"), !line.hasPrefix("   "), line.hasSuffix(":") {
                documented.append(String(line.dropFirst(2).dropLast()))
            }
        }
        #expect(!documented.isEmpty)
        #expect(documented == ServerAPI.paths)
        #expect(Set(ServerAPI.paths).count == ServerAPI.paths.count)
    }

    @Test func documentedErrorCodesAreExactlyTheAnswerableOnes() {
        var documented: [Int: Int] = [:]
        var code: Int?
        for line in Self.lines.drop(while: { $0 != "x-error-codes:" }) {
            let t = line.trimmingCharacters(in: .whitespaces)
            if t.hasPrefix("- code: ") { code = Int(t.dropFirst(8)) }
            if t.hasPrefix("status: "), let c = code { documented[c] = Int(t.dropFirst(8)) }
        }
        var answerable: [Int: Int] = [:]
        for c in APIErrorCode.allCases { answerable[c.rawValue] = Int(c.status.code) }
        for c in RoomErrorCode.allCases {
            let e = APIError(RoomError(c, ""))
            answerable[e.code] = Int(e.status.code)
        }
        // Issue 19: the IM codes (414, 10406 and 10429 are shared with the room and request codes, same status).
        for c in ImErrorCode.allCases {
            let e = APIError(ImError(c, ""))
            #expect(answerable[e.code] == nil || answerable[e.code] == Int(e.status.code), "\(c)")
            answerable[e.code] = Int(e.status.code)
        }
        // Meta refusals share their numbers (403, 404, 414) with the room codes of the same meaning.
        for c in [MetaRefusal.badParameter, .notFound, .noPermission] {
            #expect(answerable[c.rawValue] == Int(APIError(metaRefusal: c.rawValue, "").status.code))
        }
        #expect(!documented.isEmpty)
        #expect(documented == answerable)
    }

    @Test func everyOperationDocumentsTheSignatureHeadersAndTheErrorShape() {
        let operations = Self.lines.filter { $0 == "    post:" }.count
        #expect(operations == ServerAPI.paths.count)
        for header in ["AppKey", "Nonce", "CurTime", "CheckSum", "CheckSum2"] {
            #expect(Self.lines.filter { $0.hasSuffix("$ref: '#/components/parameters/\(header)'") }.count == operations)
        }
        #expect(Self.lines.filter { $0.hasSuffix("$ref: '#/components/schemas/Error'") }.count == operations)
    }
}
