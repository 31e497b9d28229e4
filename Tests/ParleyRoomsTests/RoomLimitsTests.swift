import Testing
@testable import ParleyRooms
import ParleyWire

@Suite struct RoomLimitsTests {
    @Test("E3 M1 M5 N5 Q2 Q4 R1: default limits are the seeds' values")
    func seedDefaults() {
        let limits = RoomLimits()
        #expect(limits.maxRoomsPerUser == 10)
        #expect(limits.maxFixedMembers == 1000)
        #expect(limits.maxMemberIdsPerRequest == 20)
        #expect(limits.maxHistoryLimit == 100)
        #expect(limits.historyRetentionMillis == 864_000_000)
        #expect(limits.maxRoomExtBytes == 4096)
        #expect(limits.maxQueueKeyBytes == 32)
        #expect(limits.maxQueueBatchKeyBytes == 128)
        #expect(limits.maxQueueValueBytes == 4096)
        #expect(limits.maxQueueBatchElements == 100)
        #expect(limits.maxQueueNotifyExtBytes == 2048)
    }

    @Test("Limits round-trip through the codec; out-of-range limits are refused on restore")
    func limitsCodec() throws {
        var limits = RoomLimits()
        limits.maxFixedMembers = 7
        limits.historyRetentionMillis = 1234
        #expect(try RoomLimits(decoding: limits.encoded()) == limits)
        #expect(RoomLimits().isValid)
        var negative = RoomLimits()
        negative.maxBanMinutes = -1
        #expect(!negative.isValid)
        #expect(throws: CodecError.invalidValue("limits out of range")) { try RoomLimits(decoding: negative.encoded()) }
        var huge = RoomLimits()
        huge.maxBanMinutes = Int.max
        #expect(!huge.isValid)
    }
}
