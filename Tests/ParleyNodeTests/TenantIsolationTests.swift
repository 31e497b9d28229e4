import Foundation
import ParleyClient
import ParleyRooms
import Testing

/// SPEC A8 (issue 23): apps are tenants. Two apps on one real 3-node cluster, `dev` and `evil`, each with a
/// user `alice`; `dev` owns room `wsroom`. Everything `evil` can send — every server-API endpoint that names
/// a room or a user, and the client ops over the WebSocket — reaches only `evil`'s own objects: `dev`'s room,
/// members, queue, messages, policy and mutes are neither changed nor read nor listed.
@Suite(.serialized, .timeLimit(.minutes(4))) struct TenantIsolationTests {
    static let dev = SignedAPIClient(appKey: "dev", secret: "dev-app-secret-0123456789", signsBody: true)
    static let evil = SignedAPIClient(appKey: "evil", secret: "evil-app-secret-0123456789", signsBody: true)

    /// What `dev`'s room looks like from `dev`'s side: info, members, queue and history.
    static func devView(_ cluster: LocalCluster) async throws -> String {
        let base = cluster.http(1)
        var parts: [String] = []
        for (path, body) in [("/v1/room/get", ["roomId": "wsroom"] as [String: Any]),
                             ("/v1/member/byIds", ["roomId": "wsroom", "accids": ["alice", "bob"]]),
                             ("/v1/queue/list", ["roomId": "wsroom"]),
                             ("/v1/message/history", ["roomId": "wsroom", "limit": 100])] {
            let answer = try await dev.post(base, path, body)
            #expect(answer.status == 200, "dev \(path): \(answer.json)")
            var data = answer.data
            if var room = data["room"] as? [String: Any] {
                room["onlineUserCount"] = nil  // dev's own session comes and goes in the test
                data["room"] = room
            }
            let json = try JSONSerialization.data(withJSONObject: data, options: [.sortedKeys])
            parts.append("\(path) \(String(decoding: json, as: UTF8.self))")
        }
        return parts.joined(separator: "\n")
    }

    @Test("A8: the cross-app takeover fails, and no server-API endpoint or client op of one app touches another's room")
    func oneAppCannotReadOrChangeAnothersRoomsUsersOrPolicies() async throws {
        try await withLocalCluster(extraArguments: ["--app", "dev:\(Self.dev.secret)", "--app", "evil:\(Self.evil.secret)"]) { cluster in
        try cluster.startAll()
        try await cluster.eventually("both apps to answer on every node", seconds: 30) {
            for id in cluster.ids {
                for app in [Self.dev, Self.evil] {
                    guard (try? await app.post(cluster.http(id), "/v1/room/get", ["roomId": "probe"]))?.status == 404 else { return false }
                }
            }
            return true
        }
        let base = cluster.http(1)
        for (app, token) in [(Self.dev, "dev-alice"), (Self.evil, "evil-alice")] {
            #expect(try await app.post(base, "/v1/user/create", ["accid": "alice", "token": token]).status == 200)
        }
        #expect(try await Self.dev.post(base, "/v1/user/create", ["accid": "bob", "token": "dev-bob"]).status == 200)
        let made = try await Self.dev.post(base, "/v1/room/create", ["roomId": "wsroom", "creator": "alice", "name": "Dev's"])
        #expect(made.status == 200 && (made.data["room"] as? [String: Any])?["roomId"] as? String == "wsroom", "\(made.json)")
        #expect(try await Self.dev.post(base, "/v1/queue/offer", ["roomId": "wsroom", "key": "seat", "value": "dev"]).status == 200)
        #expect(try await Self.dev.post(base, "/v1/message/send", ["roomId": "wsroom", "type": "text", "body": "dev's own"]).status == 200)

        // The takeover of the issue: evil's alice enters wsroom as its creator. The room is not evil's: refused.
        let intruder = ChatroomClient(configuration: .addresses([cluster.clientAddress(2)]))
        await #expect(throws: ChatroomError.self) {
            try await intruder.enterChatroom(ChatroomEnterRequest(
                roomId: "wsroom", auth: .independent(appKey: "evil", account: "alice", token: "evil-alice"), nickname: "Evil"))
        }
        await intruder.close()
        // dev's alice is the creator of dev's room, as before.
        let owner = ChatroomClient(configuration: .addresses([cluster.clientAddress(1)]))
        let entered = try await owner.enterChatroom(ChatroomEnterRequest(
            roomId: "wsroom", auth: .independent(appKey: "dev", account: "alice", token: "dev-alice"), nickname: "Alice"))
        #expect(entered.room.roomId == "wsroom" && entered.member.type == .creator)
        let before = try await Self.devView(cluster)

        // Every endpoint evil could aim at dev's room, user or app: refused as "no such room" or scoped to
        // evil's own objects — and dev's view is unchanged after all of them.
        let roomScoped: [(String, [String: Any])] = [
            ("/v1/room/get", ["roomId": "wsroom"]),
            ("/v1/room/update", ["roomId": "wsroom", "announcement": "owned by app evil"]),
            ("/v1/room/toggleClose", ["roomId": "wsroom", "valid": false]),
            ("/v1/room/setPolicy", ["roomId": "wsroom", "enterExitNotifications": false]),
            ("/v1/room/mute", ["roomId": "wsroom", "mute": true]),
            ("/v1/room/allowlist", ["roomId": "wsroom", "add": true, "accids": ["alice"]]),
            ("/v1/room/requestAddr", ["roomId": "wsroom", "accid": "alice"]),
            ("/v1/member/setRole", ["roomId": "wsroom", "accid": "bob", "role": "manager", "enable": true]),
            ("/v1/member/tempMute", ["roomId": "wsroom", "accid": "alice", "seconds": 600]),
            ("/v1/member/kick", ["roomId": "wsroom", "accid": "alice"]),
            ("/v1/member/page", ["roomId": "wsroom", "kind": "regular", "limit": 10]),
            ("/v1/member/byIds", ["roomId": "wsroom", "accids": ["alice"]]),
            ("/v1/queue/init", ["roomId": "wsroom", "maxSize": 10]),
            ("/v1/queue/offer", ["roomId": "wsroom", "key": "seat", "value": "evil"]),
            ("/v1/queue/poll", ["roomId": "wsroom"]),
            ("/v1/queue/list", ["roomId": "wsroom"]),
            ("/v1/queue/batchUpdate", ["roomId": "wsroom", "elements": [["key": "seat", "value": "evil"]]]),
            ("/v1/queue/drop", ["roomId": "wsroom"]),
            ("/v1/message/send", ["roomId": "wsroom", "type": "text", "body": "from evil"]),
            ("/v1/message/history", ["roomId": "wsroom", "limit": 10]),
        ]
        for (path, body) in roomScoped {
            for id in cluster.ids {
                let answer = try await Self.evil.post(cluster.http(id), path, body)
                #expect(answer.status == 404 && answer.code == RoomErrorCode.roomNotFound.rawValue,
                        "evil \(path) on node \(id): \(answer.status) \(answer.json)")
            }
        }
        // A room id naming a namespace itself is refused.
        let smuggled = try await Self.evil.post(base, "/v1/room/get", ["roomId": "dev\u{1F}wsroom"])
        #expect(smuggled.status == 400 && smuggled.code == 10414, "\(smuggled.json)")
        // Reads by batch list dev's room as missing; evil's broadcast reaches no dev room.
        let batch = try await Self.evil.post(base, "/v1/room/getBatch", ["roomIds": ["wsroom"]])
        #expect((batch.data["rooms"] as? [Any])?.isEmpty == true && batch.data["missing"] as? [String] == ["wsroom"], "\(batch.json)")
        let broadcast = try await Self.evil.post(base, "/v1/message/broadcast", ["type": "text", "body": "evil broadcast"])
        #expect(broadcast.status == 200 && broadcast.data["rooms"] as? Int == 0, "\(broadcast.json)")
        // Users are per app: evil refreshing and revoking "alice" changes its own alice, not dev's.
        #expect(try await Self.evil.post(base, "/v1/user/refreshToken", ["accid": "alice", "token": "evil-new"]).status == 200)
        #expect(try await Self.evil.post(base, "/v1/user/revokeToken", ["accid": "alice"]).status == 200)
        let devAlice = try await cluster.metaState(via: 2).user(appKey: "dev", account: "alice")
        #expect(devAlice?.tokenDigest == cluster.secrets.tokenDigest(appKey: "dev", account: "alice", token: "dev-alice") && devAlice?.revoked == false)
        // App-wide switches of evil are evil's: its policy and a global mute of its alice.
        #expect(try await Self.evil.post(base, "/v1/app/setPolicy", ["enterExitNotifications": false, "oneRoomPerUser": true]).status == 200)
        #expect(try await Self.evil.post(base, "/v1/member/globalMute", ["accid": "alice", "mute": true]).status == 200)
        // Evil's own "wsroom" is another room: made, changed and read without touching dev's.
        let own = try await Self.evil.post(base, "/v1/room/create", ["roomId": "wsroom", "creator": "alice", "name": "Evil's"])
        #expect(own.status == 200, "\(own.json)")
        #expect(try await Self.evil.post(base, "/v1/room/update", ["roomId": "wsroom", "announcement": "owned by app evil"]).status == 200)
        #expect(try await Self.evil.post(base, "/v1/message/send", ["roomId": "wsroom", "type": "text", "body": "evil's own"]).status == 200)
        let evilRoom = try await Self.evil.post(cluster.http(3), "/v1/room/get", ["roomId": "wsroom"])
        #expect((evilRoom.data["room"] as? [String: Any])?["name"] as? String == "Evil's")
        // Over the WebSocket, evil's own "bob" (dev has a bob too) enters "wsroom" — evil's — on every node's
        // edge and acts there: messages, member info, history. None of it reaches dev's wsroom.
        #expect(try await Self.evil.post(base, "/v1/user/create", ["accid": "bob", "token": "evil-bob"]).status == 200)
        for id in cluster.ids {
            let evilBob = ChatroomClient(configuration: .addresses([cluster.clientAddress(id)]))
            let inside = try await evilBob.enterChatroom(ChatroomEnterRequest(
                roomId: "wsroom", auth: .independent(appKey: "evil", account: "bob", token: "evil-bob"), nickname: "Evil Bob"))
            #expect(inside.room.roomId == "wsroom" && inside.room.name == "Evil's", "node \(id): \(inside.room)")
            try await evilBob.sendMessage("wsroom", body: "evil bob on node \(id)")
            let seen = try await evilBob.fetchMessageHistory("wsroom", query: HistoryQuery(limit: 100, order: .asc))
            let bodies = seen.compactMap { if case .message(let m) = $0 { m.body } else { nil } }
            #expect(!bodies.contains("dev's own") && bodies.contains("evil's own"), "node \(id): \(bodies)")
            try await evilBob.exitChatroom("wsroom")
            await evilBob.close()
        }

        #expect(try await Self.devView(cluster) == before, "dev's room changed through app evil")
        // dev's alice is neither globally muted nor under evil's one-room or notification policy: she still
        // sends, and bob's entering is announced to her (301) as dev's policy says.
        try await owner.sendMessage("wsroom", body: "still speaking")
        let announced = Announcements(owner.events)
        let bob = ChatroomClient(configuration: .addresses([cluster.clientAddress(3)]))
        try await bob.enterChatroom(ChatroomEnterRequest(
            roomId: "wsroom", auth: .independent(appKey: "dev", account: "bob", token: "dev-bob"), nickname: "Bob"))
        try await cluster.eventually("dev's alice to be told bob entered (301)", seconds: 15) {
            await announced.entered.contains("bob")
        }
        await owner.close()
        await bob.close()
        }
    }
}

/// The accounts a client was told entered its room (301).
private actor Announcements {
    private(set) var entered: [String] = []

    init(_ events: AsyncStream<ChatroomEvent>) {
        Task { await self.read(events) }
    }

    private func read(_ events: AsyncStream<ChatroomEvent>) async {
        for await event in events {
            if case .notification(_, let n) = event, n.type == .enter { entered += n.targets.map(\.userId) }
        }
    }
}
