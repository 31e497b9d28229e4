@testable import ParleyEdge
import Testing

/// Issue 35 item 4: which of a pipelined connection's requests may run at once.
@Suite("Request lanes")
struct RequestLanesTests {
    typealias Lanes = RequestLanes<Int>

    /// Starts what may start and returns the jobs' numbers.
    static func start(_ lanes: inout Lanes) -> [Int] { lanes.startable().map(\.job) }

    @Test("a room's requests run one at a time in order; other rooms run beside them")
    func oneLaneAtATimeOtherLanesBeside() {
        var lanes = Lanes(maxRunning: 16)
        lanes.add(1, lane: .named("a"))
        lanes.add(2, lane: .named("a"))
        lanes.add(3, lane: .named("b"))
        lanes.add(4, lane: .named("a"))
        lanes.add(5, lane: .named("c"))
        #expect(Self.start(&lanes) == [1, 3, 5])
        #expect(Self.start(&lanes).isEmpty)
        lanes.finished(.named("b"))
        #expect(Self.start(&lanes).isEmpty, "b has nothing more; a is still busy")
        lanes.finished(.named("a"))
        #expect(Self.start(&lanes) == [2])
        lanes.finished(.named("a"))
        #expect(Self.start(&lanes) == [4])
        #expect(lanes.count == 2)  // 4 and 5 running
    }

    @Test("a barrier waits for everything before it, runs alone, and holds back everything after it")
    func barriersRunAlone() {
        var lanes = Lanes(maxRunning: 16)
        lanes.add(1, lane: .named("a"))
        lanes.add(2, lane: .barrier)
        lanes.add(3, lane: .named("b"))
        #expect(Self.start(&lanes) == [1], "b may not pass the barrier")
        lanes.finished(.named("a"))
        #expect(Self.start(&lanes) == [2])
        lanes.add(4, lane: .named("c"))
        #expect(Self.start(&lanes).isEmpty, "nothing beside a running barrier")
        lanes.finished(.barrier)
        #expect(Self.start(&lanes) == [3, 4])
        lanes.add(5, lane: .barrier)
        lanes.add(6, lane: .barrier)
        lanes.finished(.named("b"))
        #expect(Self.start(&lanes).isEmpty)
        lanes.finished(.named("c"))
        #expect(Self.start(&lanes) == [5])
        lanes.finished(.barrier)
        #expect(Self.start(&lanes) == [6])
    }

    @Test("at most maxRunning run at once, still in order within each lane")
    func boundedConcurrency() {
        var lanes = Lanes(maxRunning: 2)
        for i in 0..<6 { lanes.add(i, lane: .named("r\(i % 3)")) }
        #expect(Self.start(&lanes) == [0, 1])
        lanes.finished(.named("r0"))
        #expect(Self.start(&lanes) == [2])
        lanes.finished(.named("r1"))
        #expect(Self.start(&lanes) == [3], "r0's next, the oldest waiting")
        #expect(lanes.count == 4)
    }
}
