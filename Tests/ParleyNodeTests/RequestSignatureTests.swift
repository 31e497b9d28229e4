import Testing
import ParleyAPI

/// The signing rules on their own: NIM's checksum, the time window, and the nonce memory's bounds.
@Suite struct RequestSignatureTests {
    @Test func checkSumIsLowercaseHexSHA1OfSecretNonceAndTime() {
        // Computed independently: python3 -c 'import hashlib; print(hashlib.sha1(b"secretnonce1700000000").hexdigest())'
        #expect(RequestSignature.checkSum(secret: "secret", nonce: "nonce", curTime: 1_700_000_000)
            == "c0b87c883bf8a70941d7e81c14cc7c7e7ccd3ba2")
    }

    @Test func verifyRefusesStaleTimesAndBadSums() throws {
        let now: Int64 = 1_800_000_000
        func signature(at time: Int64, secret: String = "s3cret-s3cret-s3cret") -> RequestSignature {
            RequestSignature(appKey: "k", nonce: "n", curTime: time,
                             checkSum: RequestSignature.checkSum(secret: secret, nonce: "n", curTime: time))
        }
        try signature(at: now - 300).verify(secret: "s3cret-s3cret-s3cret", now: now)
        try signature(at: now + 300).verify(secret: "s3cret-s3cret-s3cret", now: now)
        #expect(throws: APIError(.staleCurTime, "CurTime is more than 300 s from the server's clock")) {
            try signature(at: now - 301).verify(secret: "s3cret-s3cret-s3cret", now: now)
        }
        for extreme in [Int64.min, Int64.max] {
            #expect { try signature(at: extreme).verify(secret: "s3cret-s3cret-s3cret", now: now) } throws: {
                ($0 as? APIError)?.code == APIErrorCode.staleCurTime.rawValue
            }
        }
        #expect { try signature(at: now, secret: "other").verify(secret: "s3cret-s3cret-s3cret", now: now) } throws: {
            ($0 as? APIError)?.code == APIErrorCode.badChecksum.rawValue
        }
    }

    @Test func missingHeadersAreRefusedWithTheirCode() {
        let full = ["AppKey": "k", "Nonce": "n", "CurTime": "1", "CheckSum": String(repeating: "a", count: 40)]
        for dropped in full.keys {
            #expect { _ = try RequestSignature { name in name == dropped ? nil : full[name] } } throws: {
                ($0 as? APIError)?.code == APIErrorCode.missingSignature.rawValue
            }
        }
    }

    @Test func nonceLedgerRefusesRepeatsAndStaysBounded() throws {
        let ledger = NonceLedger(window: 300, perAppLimit: 3)
        try ledger.record(appKey: "a", nonce: "1", now: 1000)
        #expect { try ledger.record(appKey: "a", nonce: "1", now: 1200) } throws: {
            ($0 as? APIError)?.code == APIErrorCode.reusedNonce.rawValue
        }
        try ledger.record(appKey: "b", nonce: "1", now: 1000)  // nonces are per app
        try ledger.record(appKey: "a", nonce: "2", now: 1000)
        try ledger.record(appKey: "a", nonce: "3", now: 1100)
        // Full: a fourth live nonce is refused rather than forgetting one that could then be replayed.
        #expect { try ledger.record(appKey: "a", nonce: "4", now: 1200) } throws: {
            ($0 as? APIError)?.code == APIErrorCode.tooManyRequests.rawValue
        }
        // Once the window has passed for the oldest, they are dropped and room is made.
        try ledger.record(appKey: "a", nonce: "4", now: 1350)
        #expect(ledger.count(appKey: "a") == 2)
        try ledger.record(appKey: "a", nonce: "1", now: 1350)  // "1" expired: usable again
    }
}
