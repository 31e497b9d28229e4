import Testing
import ParleyClient

/// X2 and E8 rules without a network: what is a duplicate, where a re-enter resumes, when retrying stops.
@Suite struct ResumeLedgerTests {
    /// Which of `seqs` the ledger lets through, in order.
    func admitted(_ ledger: inout ResumeLedger, _ seqs: Int64...) -> [Bool] {
        seqs.map { ledger.admit(seq: $0) }
    }

    @Test func duplicatesAndOldEventsAreDropped() {
        var ledger = ResumeLedger()
        #expect(admitted(&ledger, 1, 2, 5, 5, 3) == [true, true, true, false, false])
        #expect(ledger.lastSeq == 5)
        // Events addressed to one user or session carry seq 0 and always pass.
        #expect(admitted(&ledger, 0, 0) == [true, true])
        #expect(ledger.lastSeq == 5)
    }

    @Test func aFreshEnterSetsTheResumePointButStillDeliversItsOwn301() {
        var ledger = ResumeLedger()
        let lost = ledger.entered(roomSeq: 40, resumed: false, gapTooOld: false, reentered: false)
        #expect(lost == nil)
        #expect(ledger.resumePoint == 40)
        // The enter's own 301 may carry the answer's seq: it is new to the app.
        #expect(admitted(&ledger, 40, 41) == [true, true])
        #expect(ledger.resumePoint == 41)
    }

    @Test func aResumedEnterKeepsThePointSoAReplayCutShortIsAskedForAgain() {
        var ledger = ResumeLedger()
        _ = ledger.entered(roomSeq: 10, resumed: false, gapTooOld: false, reentered: false)
        #expect(admitted(&ledger, 11) == [true])
        // The room went on to 30 while the link was down; the answer's seq must not move the resume point.
        let lost = ledger.entered(roomSeq: 30, resumed: true, gapTooOld: false, reentered: true)
        #expect(lost == nil)
        #expect(ledger.resumePoint == 11)
        #expect(admitted(&ledger, 12, 12, 13) == [true, false, true])
        #expect(ledger.resumePoint == 13)
    }

    @Test func aResumeTooOldReportsTheLostRangeOnce() {
        var ledger = ResumeLedger()
        _ = ledger.entered(roomSeq: 10, resumed: false, gapTooOld: false, reentered: false)
        #expect(admitted(&ledger, 12) == [true])
        let lost = ledger.entered(roomSeq: 500, resumed: false, gapTooOld: true, reentered: true)
        #expect(lost == 13...500)
        #expect(ledger.resumePoint == 500)
        let again = ledger.entered(roomSeq: 500, resumed: false, gapTooOld: true, reentered: true)
        #expect(again == nil)
    }

    @Test func aGapEventMovesPastItsRange() {
        var ledger = ResumeLedger()
        #expect(admitted(&ledger, 3) == [true])
        ledger.skip(through: 9)
        #expect(admitted(&ledger, 9, 10) == [false, true])
        ledger.skip(through: 4)
        #expect(ledger.lastSeq == 10)
    }

    @Test func retryingStopsOnlyForRefusalsAnotherAttemptCannotChange() {
        for code in [13003, 13002, 404, 4010, 4011, 4012, 4015] {
            #expect(ReconnectPolicy.endsRetrying(ChatroomError(code: code, message: "")))
        }
        for code in [408, 415, 5030, 5040, 13101, 4013] {
            #expect(!ReconnectPolicy.endsRetrying(ChatroomError(code: code, message: "")))
        }
        #expect(ReconnectPolicy().retryCount == 3)
    }

    /// A9: a re-enter whose gap was wider than the server replays gets `gapTooOld` with `replayFromSeq`: only
    /// what lies before the replay is lost; the replayed newest items still pass.
    @Test func aBoundedReplayLosesOnlyWhatLiesBeforeIt() {
        var ledger = ResumeLedger()
        #expect(admitted(&ledger, 10) == [true])
        let lost = ledger.entered(roomSeq: 500, resumed: false, gapTooOld: true, replayFromSeq: 401, reentered: true)
        #expect(lost == 11...400)
        if let lost { ledger.skip(through: lost.upperBound) }
        #expect(admitted(&ledger, 401, 500, 501) == [true, true, true])
        // Without the field (an older server) the whole gap is lost, as before.
        var old = ResumeLedger()
        _ = admitted(&old, 10)
        #expect(old.entered(roomSeq: 500, resumed: false, gapTooOld: true, reentered: true) == 11...500)
    }
}
