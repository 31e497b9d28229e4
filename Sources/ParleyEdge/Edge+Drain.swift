import ParleyCluster
import ParleyRooms

/// C5 (issue 18): while its node drains, the edge hands its clients to other edges. Each connection gets a
/// `reconnect` event per room it is in, with the room's addresses (E6, which leaves this node out), and the
/// client re-enters there with `lastSeq` and `replacing` (its session here): the room sees the session move,
/// no exit and re-entry. A connection that has not gone after `handOffDeadlineMillis` is closed with 4100;
/// its client reconnects as after any disconnect.
extension Edge {
    /// WebSocket close code for "this edge is draining: reconnect elsewhere" (docs/protocol.md).
    public static let drainingCloseCode: UInt16 = 4100

    /// One round, run each second while the node drains: tells up to `handOffsPerSecond` more connections
    /// to move, closes those past their deadline. Returns the connections still open.
    @discardableResult
    public func handOffRound() async -> Int {
        let now = ContinuousClock.now
        let deadline = Duration.milliseconds(settings.handOffDeadlineMillis)
        for (number, c) in connections.sorted(by: { $0.key < $1.key }) where !c.closing {
            if let told = c.handedOffAt, now - told >= deadline {
                close(number, code: Self.drainingCloseCode, reason: "edge draining: reconnect elsewhere")
            }
        }
        let waiting = connections.filter { $0.value.handedOffAt == nil && !$0.value.closing }.keys.sorted()
        for number in waiting.prefix(settings.handOffsPerSecond) {
            guard let c = connections[number] else { continue }
            guard !c.rooms.isEmpty else {
                // In no room: nothing to hand over; it reconnects elsewhere.
                close(number, code: Self.drainingCloseCode, reason: "edge draining: reconnect elsewhere")
                continue
            }
            connections[number]?.handedOffAt = now
            for roomId in c.rooms.sorted() {
                let addresses = await cluster.roomAddresses(roomId: roomId)
                guard let c = connections[number], !c.closing else { break }
                c.send(EventFrame.reconnect(roomId: roomId, addresses: addresses, sessionId: c.sessionId))
            }
        }
        updateGauges()
        return connections.count
    }

}
