import Foundation
import ParleyClient
import ParleyCluster
import ParleyRooms
import Testing
import ParleyPlacement

/// Issue 5 end to end through the SDK on real node processes: every notification type 301-320 is produced and
/// received with the right source, targets, notifyExt and ext (N3); anonymous users receive but cannot send
/// (E5); the 11th room is refused (E3); a ConflictLogin kick (E7, E9); transient queue items are cleared on
/// disconnect with a 320 PartClear (Q3).
@Suite(.serialized, .timeLimit(.minutes(4))) struct ClientNotificationTests {
    static let app = "sdk-notify"

    actor Inbox {
        private(set) var events: [ChatroomEvent] = []
        init(_ client: ChatroomClient) {
            let stream = client.events
            Task { await self.read(stream) }
        }
        private func read(_ stream: AsyncStream<ChatroomEvent>) async { for await e in stream { events.append(e) } }
        func notifications(_ room: String) -> [ChatroomNotification] {
            events.compactMap { if case .notification(room, let n) = $0 { n } else { nil } }
        }
        func messages(_ room: String) -> [ParleyClient.Message] {
            events.compactMap { if case .message(room, let m) = $0 { m } else { nil } }
        }
        func kicks(_ room: String) -> [ParleyClient.KickReason] {
            events.compactMap { if case .kicked(room, let reason, _) = $0 { reason } else { nil } }
        }
    }

    static func start(_ cluster: LocalCluster, accounts: [String], rooms: [String], owner: String) async throws {
        try cluster.startAll()
        try await cluster.waitForLeaders()
        try await cluster.eventually("the app to register") {
            (try? await cluster.proposeMeta(.putApp(cluster.secrets.app(app, secret: String(repeating: "n", count: 32))))) == .done
        }
        for a in accounts {
            #expect(try await cluster.proposeMeta(.putUser(cluster.secrets.user(appKey: app, account: a, token: "tok-\(a)"))) == .done)
        }
        for room in rooms {
            let scoped = AppScope.scoped(room, in: app)  // the cluster's id of the app's room (A8)
            let created = try await cluster.submit(.createRoom(CreateRoom(roomId: scoped, creator: owner, name: room)), room: scoped, via: 1)
            #expect(created.errorCode == nil)
        }
    }

    static func client(_ cluster: LocalCluster, _ node: UInt64) -> ChatroomClient {
        ChatroomClient(configuration: .addresses([cluster.clientAddress(node)]))
    }

    static func enter(_ c: ChatroomClient, _ user: String, _ room: String) async throws {
        try await c.enterChatroom(ChatroomEnterRequest(roomId: room, auth: .independent(appKey: app, account: user, token: "tok-\(user)"),
                                                       nickname: user, avatar: "https://a/\(user)"))
    }

    @Test("N3: every notification type 301-320 reaches a member on another edge with source, targets, notifyExt and ext")
    func everyNotificationType() async throws {
        try await withLocalCluster { cluster in
        let room = "notify-room"
        try await Self.start(cluster, accounts: ["olga", "pat", "wendy", "kim"], rooms: [room], owner: "olga")
        let olga = Self.client(cluster, 1), wendy = Self.client(cluster, 2), pat = Self.client(cluster, 3)
        let kim = Self.client(cluster, 3), patAgain = Self.client(cluster, 1)
        let watch = Inbox(wendy)
        let kimInbox = Inbox(kim)
        try await Self.enter(wendy, "wendy", room)
        try await Self.enter(olga, "olga", room)
        try await Self.enter(pat, "pat", room)
        try await olga.markMemberManager(room, userId: "pat", enable: true, notifyExt: "n307")            // 307
        try await olga.markMemberManager(room, userId: "pat", enable: false, notifyExt: "n308")           // 308
        try await olga.markNormalMember(room, userId: "pat", enable: false, notifyExt: "n310")            // 310
        try await olga.markNormalMember(room, userId: "pat", enable: true, notifyExt: "n309")             // 309
        try await olga.updateMemberMute(room, userId: "pat", enable: true, notifyExt: "n305")             // 305
        try await olga.updateMemberMute(room, userId: "pat", enable: false, notifyExt: "n306")            // 306
        try await olga.updateMemberTempMute(room, userId: "pat", duration: 60, needNotify: true, notifyExt: "n314") // 314
        try await olga.updateMemberTempMute(room, userId: "pat", duration: 0, needNotify: true, notifyExt: "n315")  // 315
        try await olga.updateChatroomInfo(room, RoomInfoUpdate(name: "Renamed"), needNotify: true, notifyExt: "n312") // 312
        try await pat.updateMyChatroomMemberInfo(room, MemberInfoUpdate(nickname: "Pat2"), needNotify: true, notifyExt: "n316") // 316
        try await pat.updateChatroomQueueObject(room, QueueElement(key: "mic", value: "pat"))               // 317 offer
        try await olga.setRoomMute(room, enable: true, needNotify: true, notifyExt: "n318")                // 318
        try await olga.setRoomMute(room, enable: false, needNotify: true, notifyExt: "n319")               // 319
        try await Self.enter(kim, "kim", room)
        try await olga.kickMember(room, userId: "kim", notifyExt: "n313")                                  // 313
        try await olga.updateMemberBlack(room, userId: "pat", enable: true, notifyExt: "n303")             // 303
        try await olga.updateMemberBlack(room, userId: "pat", enable: false, notifyExt: "n304")            // 304
        // Q3: Pat comes back, offers a transient element and disconnects: 302 and a 320 PartClear.
        try await Self.enter(patAgain, "pat", room)
        try await patAgain.updateChatroomQueueObject(room, QueueElement(key: "seat", value: "pat"), transient: true)
        await patAgain.close()
        try await cluster.eventually("the 320 PartClear", seconds: 20) {
            await watch.notifications(room).contains { $0.type == .queueBatchChange }
        }
        // R2: the app server closes the room: 311 and everyone kicked with reason 1.
        let scoped = AppScope.scoped(room, in: Self.app)
        _ = try await cluster.submit(.closeRoom(roomId: scoped, ext: "bye"), room: scoped, via: 2)
        try await cluster.eventually("the 311", seconds: 20) { await watch.notifications(room).contains { $0.type == .closed } }

        let seen = await watch.notifications(room)
        #expect(Set(seen.map(\.type.rawValue)) == Set(301...320), "types seen: \(seen.map(\.type.rawValue))")
        func one(_ type: ParleyClient.NotificationType) -> ChatroomNotification? { seen.first { $0.type == type } }
        for (type, ext) in [(307, "n307"), (308, "n308"), (310, "n310"), (309, "n309"), (305, "n305"), (306, "n306"),
                            (314, "n314"), (315, "n315"), (303, "n303"), (304, "n304"), (313, "n313")] {
            let n = try #require(one(ParleyClient.NotificationType(rawValue: type)), "\(type)")
            #expect(n.source.userId == "olga" && n.notifyExt == ext, "\(type)")
            #expect(n.targets.map(\.userId) == [type == 313 ? "kim" : "pat"], "\(type) targets")
        }
        #expect(one(.addMuteTemporarily)?.ext == .muteDuration(seconds: 60))
        #expect(one(.infoUpdated)?.notifyExt == "n312" && one(.infoUpdated)?.source.userId == "olga")
        #expect(one(.memberUpdateInfo)?.source.userId == "pat" && one(.memberUpdateInfo)?.notifyExt == "n316")
        #expect(one(.queueChange)?.ext == .queueChange(.offer, key: "mic", value: "pat"))
        #expect(one(.roomMuted)?.notifyExt == "n318" && one(.roomUnMuted)?.notifyExt == "n319")
        #expect(one(.queueBatchChange)?.ext == .queueBatch(.partClear, elements: [QueueElement(key: "seat", value: "pat")]))
        #expect(seen.contains { $0.type == .exit && $0.source.userId == "pat" })
        #expect(seen.filter { $0.type == .enter }.map(\.source.userId).starts(with: ["wendy", "olga", "pat"]))
        // E9: Kim was kicked by a manager (reason 2); Wendy, still in at the close, with reason 1.
        try await cluster.eventually("kim's kick") { await kimInbox.kicks(room) == [.byManager] }
        try await cluster.eventually("wendy's close kick") { await watch.kicks(room).contains(.invalidRoom) }
        for c in [olga, wendy, pat, kim] { await c.close() }
        }
    }

    @Test("E5 E3 E7: anonymous users receive but cannot send; the 11th room is refused; a second device kicks the first")
    func anonymousElevenRoomsAndConflictLogin() async throws {
        try await withLocalCluster { cluster in
        let rooms = (0..<11).map { "many-\($0)" }
        try await Self.start(cluster, accounts: ["owner", "quinn", "rae"], rooms: rooms, owner: "owner")
        // E5: an anonymous member gets Quinn's message but may not send.
        let quinn = Self.client(cluster, 1), anon = Self.client(cluster, 2)
        let anonInbox = Inbox(anon)
        try await Self.enter(quinn, "quinn", rooms[0])
        let entered = try await anon.enterChatroom(ChatroomEnterRequest(roomId: rooms[0], auth: .anonymous(appKey: Self.app),
                                                                        nickname: "guest", avatar: "https://a/guest"))
        #expect(entered.account.hasPrefix("anon-") && entered.authMode == .anonymous)
        try await quinn.sendMessage(rooms[0], body: "hello guests")
        try await cluster.eventually("the guest receives") { await anonInbox.messages(rooms[0]).map(\.body) == ["hello guests"] }
        do {
            try await anon.sendMessage(rooms[0], body: "may I?")
            Issue.record("an anonymous user sent a message")
        } catch let e as ChatroomError {
            #expect(e.code == 13102)
        }
        // E3: Rae enters ten rooms (spread over the shards); the eleventh is refused, wherever it lives.
        let rae = Self.client(cluster, 3)
        for room in rooms.prefix(10) { try await Self.enter(rae, "rae", room) }
        #expect(Set(rooms.prefix(10).map { ShardMap(shardCount: cluster.shards).shard(ofRoom: AppScope.scoped($0, in: Self.app)) }).count > 1)
        do {
            try await Self.enter(rae, "rae", rooms[10])
            Issue.record("the 11th room was entered")
        } catch let e as ChatroomError {
            #expect(e.code == 13101)
        }
        // Leaving one frees a place.
        try await rae.exitChatroom(rooms[0])
        try await cluster.eventually("the slot to free up") { (try? await Self.enter(rae, "rae", rooms[10])) != nil }
        // E7: single-device policy in room 1: Quinn's second device kicks the first with reason 3.
        let quinnsRoom = AppScope.scoped(rooms[1], in: Self.app)
        _ = try await cluster.submit(.setRoomPolicy(RoomPolicyUpdate(roomId: quinnsRoom, devicePolicy: .singleDevice)), room: quinnsRoom, via: 1)
        let first = Self.client(cluster, 1), second = Self.client(cluster, 2)
        let firstInbox = Inbox(first)
        try await Self.enter(first, "quinn", rooms[1])
        try await Self.enter(second, "quinn", rooms[1])
        try await cluster.eventually("the ConflictLogin kick") { await firstInbox.kicks(rooms[1]) == [.byConflictLogin] }
        for c in [quinn, anon, rae, first, second] { await c.close() }
        }
    }
}
