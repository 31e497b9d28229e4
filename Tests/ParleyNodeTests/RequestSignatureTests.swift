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
        try ledger.record(appKey: "a", nonce: "1", curTime: 1000, now: 1000)
        #expect { try ledger.record(appKey: "a", nonce: "1", curTime: 1200, now: 1200) } throws: {
            ($0 as? APIError)?.code == APIErrorCode.reusedNonce.rawValue
        }
        try ledger.record(appKey: "b", nonce: "1", curTime: 1000, now: 1000)  // nonces are per app
        try ledger.record(appKey: "a", nonce: "2", curTime: 1000, now: 1000)
        try ledger.record(appKey: "a", nonce: "3", curTime: 1100, now: 1100)
        // Full: a fourth live nonce is refused rather than forgetting one that could then be replayed.
        #expect { try ledger.record(appKey: "a", nonce: "4", curTime: 1200, now: 1200) } throws: {
            ($0 as? APIError)?.code == APIErrorCode.tooManyRequests.rawValue
        }
        // Once the window has passed for the oldest, they are dropped and room is made.
        try ledger.record(appKey: "a", nonce: "4", curTime: 1350, now: 1350)
        #expect(ledger.count(appKey: "a") == 2)
        try ledger.record(appKey: "a", nonce: "1", curTime: 1350, now: 1350)  // "1" expired: usable again
    }

    // MARK: Issue 24: a signature that covers what the request does, and nonces kept long enough

    @Test func checkSum2IsHMACSHA256OfMethodPathNonceTimeAndTheBodysDigest() {
        // Computed independently: python3 -c 'import hmac,hashlib; b=b"{\"accid\":\"alice\"}";
        // t="parley-v2\nPOST\n/v1/user/get\nnonce\n1700000000\n"+hashlib.sha256(b).hexdigest();
        // print(hmac.new(b"secret-secret-secret", t.encode(), hashlib.sha256).hexdigest())'
        #expect(RequestSignature.checkSum2(secret: "secret-secret-secret", method: "POST", path: "/v1/user/get",
                                           nonce: "nonce", curTime: 1_700_000_000, body: Array(#"{"accid":"alice"}"#.utf8))
            == "4592325b10a8f57985995e044e0017b13fc88aeaa855d4c015a51569ba14c1c0")
    }

    @Test func headersSignedWithCheckSum2CannotCarryAnotherPathBodyOrMethod() throws {
        let secret = "s3cret-s3cret-s3cret", now: Int64 = 1_800_000_000
        let body = Array(#"{"roomId":"r1"}"#.utf8)
        let headers = RequestSignature.signedHeaders(appKey: "k", secret: secret, nonce: "n1", curTime: now,
                                                     path: "/v1/room/get", body: body)
        let signature = try RequestSignature { headers[$0] }
        try signature.verify(secret: secret, now: now, path: "/v1/room/get", body: body, requireSignedBody: true)
        let refused: [(String, String, [UInt8])] = [
            ("POST", "/v1/user/refreshToken", body),                              // another call
            ("POST", "/v1/room/get", Array(#"{"roomId":"r2"}"#.utf8)),            // another body
            ("GET", "/v1/room/get", body),                                        // another method
        ]
        for (method, path, other) in refused {
            #expect { try signature.verify(secret: secret, now: now, method: method, path: path, body: other) } throws: {
                ($0 as? APIError)?.code == APIErrorCode.badChecksum.rawValue
            }
        }
        // A wrong CheckSum beside a right CheckSum2 is still wrong: every signature a request carries must hold.
        var both = headers
        both["CheckSum"] = String(repeating: "0", count: 40)
        #expect { try RequestSignature { both[$0] }.verify(secret: secret, now: now, path: "/v1/room/get", body: body) } throws: {
            ($0 as? APIError)?.code == APIErrorCode.badChecksum.rawValue
        }
    }

    @Test func anAppThatRequiresSignedBodiesRefusesNIMsCheckSumAlone() throws {
        let secret = "s3cret-s3cret-s3cret", now: Int64 = 1_800_000_000
        let legacy = try RequestSignature { RequestSignature.headers(appKey: "k", secret: secret, nonce: "n", curTime: now)[$0] }
        try legacy.verifyHeaders(secret: secret, now: now)
        #expect { try legacy.verifyHeaders(secret: secret, now: now, requireSignedBody: true) } throws: {
            ($0 as? APIError)?.code == APIErrorCode.signedBodyRequired.rawValue && ($0 as? APIError)?.status == .unauthorized
        }
    }

    /// CurTime is accepted up to 300 s either side, so a request signed 295 s ahead stays acceptable until
    /// 595 s after it arrived: its nonce must be remembered that long (it used to go after 300 s).
    @Test func aNonceIsKeptWhileItsCurTimeIsAcceptable() throws {
        let ledger = NonceLedger(window: 300)
        try ledger.record(appKey: "a", nonce: "ahead", curTime: 1295, now: 1000)
        for replayAt: Int64 in [1001, 1303, 1500, 1595] {
            #expect { try ledger.record(appKey: "a", nonce: "ahead", curTime: 1295, now: replayAt) } throws: {
                ($0 as? APIError)?.code == APIErrorCode.reusedNonce.rawValue
            }
        }
        // A CurTime in the past is kept for the window after arrival all the same.
        try ledger.record(appKey: "a", nonce: "behind", curTime: 700, now: 1000)
        #expect { try ledger.record(appKey: "a", nonce: "behind", curTime: 700, now: 1299) } throws: {
            ($0 as? APIError)?.code == APIErrorCode.reusedNonce.rawValue
        }
    }
}
