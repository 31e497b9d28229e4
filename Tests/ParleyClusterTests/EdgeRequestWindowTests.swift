import Testing
@testable import ParleyCluster

/// Issue 18: the dashboard's p99 and messages/s come from what the edge answered since the last sample.
@Suite struct EdgeRequestWindowTests {
    @Test func theP99IsTheBucketHoldingThe99thPercentileAnswerAndATakeStartsOver() {
        let window = EdgeRequestWindow()
        #expect(window.take() == .init(requests: 0, messages: 0, p99Millis: nil))
        for _ in 0..<98 { window.record(millis: 0.8, message: true) }   // bucket ≤ 1 ms
        window.record(millis: 40, message: false)                      // ≤ 50 ms
        window.record(millis: 40, message: false)
        // 100 answers: the 99th is one of the two slow ones.
        #expect(window.take() == .init(requests: 100, messages: 98, p99Millis: 50))
        #expect(window.take() == .init(requests: 0, messages: 0, p99Millis: nil), "taken: the next window is empty")
        for _ in 0..<199 { window.record(millis: 2.5, message: false) }  // ≤ 3 ms
        window.record(millis: 900, message: false)
        #expect(window.take().p99Millis == 3, "1 slow answer in 200 is above the 99th percentile")
        window.record(millis: 60_000, message: false)
        #expect(window.take().p99Millis == 20_000, "beyond the last bound: the open bucket")
    }
}
