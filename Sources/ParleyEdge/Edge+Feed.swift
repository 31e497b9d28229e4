import NIOCore
import ParleyCluster
import ParleyHost
import ParleyRooms
import ParleyPlacement

extension Edge {
    /// Starts the shard's feed if none runs and waits until it has its starting cursor.
    func startFeed(_ shard: ShardID) async throws {
        let feed: ShardFeed
        if let running = feeds[shard] {
            feed = running
        } else {
            feed = ShardFeed(shard: shard, edge: self, cluster: cluster, settings: settings, local: localFeed(of: shard))
            feeds[shard] = feed
        }
        do {
            _ = try await feed.start.value
        } catch {
            // A feed that never started is dropped, so the next enter tries again.
            if feeds[shard] === feed {
                feed.stop()
                feeds[shard] = nil
            }
            throw error
        }
    }

    /// The batched poll of the shard's Raft loop on this node (nil when the cluster has none).
    private func localFeed(of shard: ShardID) -> LocalFeed? {
        guard let source = cluster.localFeeds else { return nil }
        let partition = source.partition(of: shard)
        if let feed = localFeeds[partition] { return feed }
        let feed = LocalFeed(partition: partition, source: source, edge: self, settings: settings)
        localFeeds[partition] = feed
        return feed
    }

    /// Pages of several shards from one batched poll (issue 35): their frames go to each loop in one hand-over.
    func deliver(_ pages: [ShardEventPage]) async {
        for page in pages { await deliver(page, handOver: false) }
        gathered.handOver()
    }

    /// Fans one page of a shard's events out to the local sessions they address. `handOver`: the page's frames
    /// go to their loops now (else the caller hands them over).
    func deliver(_ page: ShardEventPage, handOver: Bool = true) async {
        guard feeds[page.shard] != nil else { return }
        if page.gap {
            // The replica no longer holds what we missed: fill every local room of the shard from history.
            for (roomId, room) in rooms where room.shard == page.shard {
                guard let last = room.lastSeq else { continue }
                await fill(roomId: roomId, after: last, before: nil)
            }
        }
        if page.gap { imFeedGap(shard: page.shard) }
        for batch in page.batches {
            for event in batch.events {
                await route(event)
            }
            if !batch.im.isEmpty {
                gathered.handOver()
                await deliverIm(batch.im)
            }
            let kicked = kickedInBatch
            kickedInBatch = []
            for (connection, roomId) in kicked { leave(connection, roomId: roomId) }
        }
        // The page's frames go to each loop at once: a connection gets all of them in one flush.
        if handOver { gathered.handOver() }
    }

    /// One event: dedupe and gap-fill room-wide events by seq, then write the encoded bytes (once for all
    /// sessions) to every local session it addresses.
    func route(_ event: RoomEvent) async {
        guard let known = rooms[event.roomId] else { return }
        if event.seq > 0 {
            if let last = known.lastSeq {
                if event.seq <= last { return }
                if event.seq > last + 1 {
                    await fill(roomId: event.roomId, after: last, before: event.seq)
                    guard let now = rooms[event.roomId]?.lastSeq, event.seq > now else { return }
                }
            }
            rooms[event.roomId]?.lastSeq = event.seq
            // D3: above the room's ceiling on this edge a message may be shed (its sessions are told).
            if case .message(let m) = event.kind, !delivers(m, roomId: event.roomId) { return }
        }
        if rooms[event.roomId]?.shed.isEmpty == false { tellShed(roomId: event.roomId) }
        guard let room = rooms[event.roomId] else { return }
        // E9 / issue 16: after a kick or a `lost` status the session is out of the room; the edge forgets it
        // once the batch is written (the client, told, decides whether to re-enter).
        var kicked = false
        if case .kicked = event.kind { kicked = true }
        if case .status(.lost) = event.kind { kicked = true }
        var frame: TextFrame?
        var deliveries = 0
        func deliver(_ connection: UInt64, _ session: LocalSession) {
            if frame == nil { frame = TextFrame(EventFrame.encode(event), sheddable: Sheddable(event)) }
            deliveries += 1
            write(frame!, seq: event.seq, kicked: kicked, roomId: event.roomId, connection: connection, session)
        }
        switch event.audience {
        case .room where !kicked:
            // The steady sessions' sockets go to their loops in one hand-over each (issue 35): the actor no
            // longer visits every member for every event.
            let audience: RoomAudience
            if let kept = room.audience {
                audience = kept
            } else {
                audience = room.makeAudience(floorBelow: event.seq > 0 ? event.seq - 1 : room.lastSeq ?? 0)
                rooms[event.roomId]?.audience = audience
            }
            if !audience.loops.isEmpty {
                let shared = TextFrame(EventFrame.encode(event), sheddable: Sheddable(event))
                frame = shared
                for loop in audience.loops { gathered.add(shared, to: loop.sockets, outbox: loop.outbox) }
                deliveries += audience.steady
            }
            for (connection, session) in audience.others { deliver(connection, session) }
        case .room:
            for (connection, session) in room.sessions { deliver(connection, session) }
        case .users(let ids):
            let users = Set(ids)
            for (connection, session) in room.sessions where users.contains(session.userId) { deliver(connection, session) }
        case .sessions(let ids):
            let sids = Set(ids)
            for (connection, session) in room.sessions where sids.contains(session.sessionId) { deliver(connection, session) }
        }
        if deliveries > 0 { countFanout(deliveries: deliveries) }
    }

    /// Writes (or buffers, while the session's enter is in flight) one encoded event. `session` is the
    /// session as the room held it when the event came (only this call changes it meanwhile).
    private func write(_ frame: TextFrame, seq: UInt64, kicked: Bool, roomId: String, connection: UInt64,
                       _ session: LocalSession) {
        if session.buffering {
            rooms[roomId]?.sessions[connection]?.buffer.append((seq, frame, kicked))
            return
        }
        guard seq == 0 || seq > session.floor else { return }
        if session.exiting && seq == 0 { return }
        gathered.add(frame, to: session.socket)
        // E9: a kicked session has left the room (after this batch); the connection stays open for its other rooms.
        if kicked { kickedInBatch.append((connection, roomId)) }
    }

    /// X2: delivers history items with seq in (after, before) to the room's sessions; what history no longer
    /// holds becomes a `gap` event. `before` nil = everything history has.
    func fill(roomId: String, after: UInt64, before: UInt64?) async {
        guard let shard = rooms[roomId]?.shard else { return }
        gathered.handOver()  // before the edge awaits: nothing sent meanwhile may overtake them
        defer { gathered.handOver() }
        let result = await history(roomId: roomId, shard: shard, after: after, upTo: before.map { $0 - 1 } ?? 0)
        var expected = after + 1
        var items: [HistoryItem] = []
        var gaps: [(UInt64, UInt64)] = []
        switch result {
        case .success(let list):
            for item in list where before == nil || item.seq < before! {
                guard item.seq >= expected else { continue }
                if item.seq > expected { gaps.append((expected, item.seq - 1)) }
                items.append(item)
                expected = item.seq + 1
            }
            if let before, expected < before { gaps.append((expected, before - 1)) }
        case .failure:
            if let before, expected < before { gaps.append((expected, before - 1)) }
        }
        guard let room = rooms[roomId] else { return }
        // Gaps and items go out in seq order.
        var gapIndex = 0
        func flushGaps(upTo seq: UInt64) {
            while gapIndex < gaps.count, gaps[gapIndex].0 < seq {
                let frame = TextFrame(EventFrame.gap(roomId: roomId, from: gaps[gapIndex].0, to: gaps[gapIndex].1))
                for (connection, session) in room.sessions {
                    write(frame, seq: 0, kicked: false, roomId: roomId, connection: connection, session)
                }
                gapIndex += 1
            }
        }
        for item in items {
            flushGaps(upTo: item.seq)
            let frame = TextFrame(EventFrame.encode(item, roomId: roomId))
            for (connection, session) in room.sessions {
                write(frame, seq: item.seq, kicked: false, roomId: roomId, connection: connection, session)
            }
            rooms[roomId]?.lastSeq = item.seq
        }
        flushGaps(upTo: UInt64.max)
        if let before { rooms[roomId]?.lastSeq = max(rooms[roomId]?.lastSeq ?? 0, before - 1) }
    }
}
