import ParleyRooms

/// SPEC D3: a room's delivered rate on this edge, capped per app (`/v1/app/setBudgets`'s
/// `roomDeliveredPerSecond`). Above the ceiling low messages are shed first, then normal ones; high ones never
/// are. The room's sessions are told by seq with a `shed` event (reason "rate") before the room's next event
/// reaches them, or a second after the first shed one if the room goes quiet.
extension Edge {
    /// Whether the room's message `m` goes to its sessions on this edge.
    func delivers(_ m: ChatMessage, roomId: String) -> Bool {
        guard let app = rooms[roomId]?.app, let ceiling = appLimits.roomCeiling(ofApp: app) else { return true }
        let sent = UInt64(max(0, m.time)) * 1_000_000
        if rooms[roomId]?.rate.admits(m.priority, ceiling: ceiling, nowNanoseconds: sent) != false { return true }
        rooms[roomId]?.shed.add(roomId: roomId, seq: m.seq)
        metrics?.shed("rate")
        if rooms[roomId]?.shedNoticeDue == false {
            rooms[roomId]?.shedNoticeDue = true
            Task {
                try? await Task.sleep(for: .seconds(1))
                await self.tellShedAlone(roomId: roomId)
            }
        }
        return false
    }

    /// Tells the room's sessions what was shed; a session still entering gets it after its answer (its buffer),
    /// so it is not missed by one that entered while the room was above its ceiling.
    func tellShed(roomId: String) {
        rooms[roomId]?.shedNoticeDue = false
        guard let frames = rooms[roomId]?.shed.takeFrames(reason: "rate"), let room = rooms[roomId] else { return }
        for frame in frames {
            for (connection, session) in room.sessions {
                if session.buffering {
                    rooms[roomId]?.sessions[connection]?.buffer.append((0, frame, false))
                } else {
                    gathered.add(frame, to: session.socket)
                }
            }
        }
    }

    /// `tellShed` when no page is being delivered (the room went quiet after shedding).
    private func tellShedAlone(roomId: String) {
        guard rooms[roomId]?.shed.isEmpty == false else { return }
        tellShed(roomId: roomId)
        gathered.handOver()
    }
}
