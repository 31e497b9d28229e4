import Foundation
import Testing
import ParleyAPI

/// Issue 24, attack 2, on real nodes whose wall clocks move: a request signed with a CurTime 295 s ahead
/// (inside the 300 s window) and replayed byte for byte 303 s later (still inside it: its CurTime is now 8 s
/// old) must be refused on every node, and so until its CurTime leaves the window (595 s). Before issue 22/24 a node forgot the nonce 300 s after it arrived and
/// stored the message twice. The nodes run under libfaketime with their wall clock read from a file, so the
/// test moves every node's clock 303 s forward at once instead of waiting (their monotonic clocks, which
/// drive Raft and every timeout, are left alone: what a real NTP step does).
@Suite(.serialized, .timeLimit(.minutes(5))) struct ReplayWindowTests {
    static let appKey = "rw-app"
    static let secret = "rw-app-secret-0123456789"
    static let libfaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
    /// NIM's CheckSum (what an old SDK sends), which the app chooses to accept (SPEC T2).
    let api = SignedAPIClient(appKey: ReplayWindowTests.appKey, secret: ReplayWindowTests.secret, signsBody: false)

    @Test(.enabled(if: FileManager.default.fileExists(atPath: libfaketime),
                   "libfaketime is missing (apt-get install faketime); .ci/run installs it"))
    func A7_aNonceIsRefusedForAsLongAsItsCurTimeIsAcceptable() async throws {
        let clock = FileManager.default.temporaryDirectory.appendingPathComponent("parley-clock-\(UUID().uuidString)")
        try "+0".write(to: clock, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: clock) }
        let environment = ["LD_PRELOAD": Self.libfaketime, "FAKETIME_TIMESTAMP_FILE": clock.path,
                           "FAKETIME_CACHE_DURATION": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"]
        try await withLocalCluster(extraArguments: ["--app", "\(Self.appKey):\(Self.secret)"],
                                   environment: environment) { cluster in
            try cluster.startAll()
            try await cluster.allowNimCheckSum(api)
            let base = cluster.http(1)
            #expect(try await api.post(base, "/v1/user/create", ["accid": "ann", "token": "tok-ann"]).status == 200)
            #expect(try await api.post(base, "/v1/room/create", ["roomId": "rw", "creator": "ann", "name": "R"]).status == 200)

            // The captured requests, one for each moment it is replayed at (so no replay is caught only because
            // an earlier one was): NIM's CheckSum (what an old SDK sends), CurTime 295 s ahead of now.
            let offsets: [Int64] = [303, 340, 580]
            var captured: [Int64: (body: Data, headers: [String: String?], at: Date)] = [:]
            for offset in offsets {
                let body = try JSONSerialization.data(withJSONObject: ["roomId": "rw", "type": "text", "body": "once-\(offset)",
                                                                       "fromAccid": "ann"])
                let ahead = Int64(Date().timeIntervalSince1970) + 295
                let headers = RequestSignature.headers(appKey: Self.appKey, secret: Self.secret, nonce: UUID().uuidString,
                                                       curTime: ahead).mapValues { Optional($0) }
                let first = try await api.post(base, "/v1/message/send", [:], headers: headers, rawBody: body)
                #expect(first.status == 200, "\(first.json)")
                captured[offset] = (body, headers, Date())
            }

            // Time passes on every node's clock: 303 s (the attack as reported), 340 s (past any expiry counted
            // from arrival, clock skew included) and 580 s (the CurTime is 285 s old, near the end of the window).
            for offset in offsets {
                // The clock moves by `offset` less the real time since the capture, so the CurTime is exactly
                // `offset` - 295 s old at the replay however long a loaded machine took to get here (at +580 the
                // margin to the 300 s window is 15 s, which a busy CI run once used up).
                let request = try #require(captured[offset])
                let shift = offset - Int64(Date().timeIntervalSince(request.at).rounded(.up))
                try "+\(shift)".write(to: clock, atomically: true, encoding: .utf8)
                // Signed 301 s before the nodes' time: refused as stale (10405) exactly once a node's clock has moved.
                let probe = RequestSignature.headers(appKey: Self.appKey, secret: Self.secret, nonce: UUID().uuidString,
                                                     curTime: Int64(Date().timeIntervalSince1970) + shift - 301)
                    .mapValues { Optional($0) }
                try await cluster.eventually("every node's clock to be \(offset) s ahead", seconds: 20) {
                    for id in cluster.ids {
                        let now = try? await api.post(cluster.http(id), "/v1/room/get", ["roomId": "rw"], headers: probe)
                        guard now?.code == 10405 else { return false }
                    }
                    return true
                }
                // The replay: its CurTime is inside every node's window, so only the remembered request can
                // refuse it.
                for id in cluster.ids {
                    let again = try await api.post(cluster.http(id), "/v1/message/send", [:], headers: request.headers,
                                                   rawBody: request.body)
                    #expect(again.code == 10406, "replayed to node \(id) at +\(offset) s: \(again.status) \(again.json)")
                }
            }
            // A new request signed for the nodes' time is served (the window itself still works), and the
            // room holds the message once.
            let later = Int64(Date().timeIntervalSince1970) + 580
            let fresh = RequestSignature.headers(appKey: Self.appKey, secret: Self.secret, nonce: UUID().uuidString,
                                                 curTime: later).mapValues { Optional($0) }
            let history = try await api.post(base, "/v1/message/history", [:], headers: fresh,
                                             rawBody: try JSONSerialization.data(withJSONObject: ["roomId": "rw", "limit": 100]))
            #expect(history.status == 200, "\(history.json)")
            let bodies = (history.data["items"] as? [[String: Any]] ?? []).compactMap { $0["body"] as? String }
            #expect(offsets.allSatisfy { offset in bodies.filter { $0 == "once-\(offset)" }.count == 1 }, "\(bodies)")
        }
    }
}
