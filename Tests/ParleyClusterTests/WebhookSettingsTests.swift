import Testing
import ParleyCluster
import ParleyRaft
import ParleyRooms
import ParleyWire
import ParleyPlacement

/// SPEC W1: an app's webhooks in the meta group — what is kept, what is refused, how it is written — and the
/// node's rule for the targets it calls.
@Suite struct WebhookSettingsTests {
    static let app = ApplyContext(commandIndex: 1, timestamp: 1_000, actor: .appServer)
    static let s = MetaSecrets(clusterSecret: "webhook-tests")

    static func withApp() -> MetaState {
        var m = MetaState()
        _ = m.apply(.registerNode(NodeRecord(id: 1, peerAddress: "a:1", httpAddress: "b:2", state: .active, registeredAt: 1)),
                    context: app)
        _ = m.apply(.putApp(s.app("k", secret: String(repeating: "1", count: 16))), context: app)
        return m
    }

    static let full = WebhookSettings(url: "https://hooks.example.com/parley?x=1", events: [.roomMessage, .roomEnter, .roomExit],
                                      preSendRooms: .named(["lobby", "stage"]), preSendIm: true, timeoutMillis: 1_500,
                                      onFailure: .refuse)

    @Test func W1_settingsAreKeptPerAppAndRemovedWithIt() throws {
        var m = Self.withApp()
        #expect(m.apply(.setWebhooks(appKey: "nope", Self.full), context: Self.app) == .refusal(.notFound, "no app nope"))
        #expect(m.apply(.setWebhooks(appKey: "k", Self.full), context: Self.app) == .done)
        #expect(m.webhooks == ["k": Self.full])
        #expect(m.apply(.setWebhooks(appKey: "k", nil), context: Self.app) == .done)
        #expect(m.webhooks.isEmpty)
        _ = m.apply(.setWebhooks(appKey: "k", Self.full), context: Self.app)
        _ = m.apply(.removeApp(appKey: "k"), context: Self.app)
        #expect(m.webhooks.isEmpty)
    }

    @Test func W1_badSettingsAreRefusedAndChangeNothing() throws {
        var m = Self.withApp()
        let before = m.snapshot()
        let bad: [WebhookSettings] = [
            WebhookSettings(url: ""),
            WebhookSettings(url: "ftp://hooks.example.com/"),
            WebhookSettings(url: "https://"),
            WebhookSettings(url: "https://user:pw@hooks.example.com/"),
            WebhookSettings(url: "https://hooks.example.com/#frag"),
            WebhookSettings(url: "https://hooks.example.com:99999/"),
            WebhookSettings(url: "https://hooks.example.com/a b"),
            WebhookSettings(url: "https://hooks.example.com/" + String(repeating: "a", count: 1_100)),
            WebhookSettings(url: "https://hooks.example.com/", timeoutMillis: 5_001),
            WebhookSettings(url: "https://hooks.example.com/", timeoutMillis: 99),
            WebhookSettings(url: "https://hooks.example.com/", preSendRooms: .named([])),
            WebhookSettings(url: "https://hooks.example.com/", preSendRooms: .named([String(repeating: "r", count: 129)])),
            WebhookSettings(url: "https://hooks.example.com/", preSendRooms: .named((0...1_000).map { "r\($0)" })),
        ]
        for settings in bad {
            #expect(settings.problem != nil, "\(settings.url.prefix(60)) passed")
            guard case .refused(let code, _) = m.apply(.setWebhooks(appKey: "k", settings), context: Self.app) else {
                Issue.record("accepted: \(settings.url.prefix(60))"); continue
            }
            #expect(code == MetaRefusal.badParameter.rawValue)
        }
        #expect(m.snapshot() == before)
    }

    /// Snapshot 6 only when an app has webhooks (a state without is written as before, for nodes of peer
    /// protocol 7 during a rolling upgrade); every version restores, and a cut snapshot never does.
    @Test func W1_snapshotsAreVersion6OnlyWithWebhooks() throws {
        var m = Self.withApp()
        #expect(m.snapshot().first == 4)
        _ = m.apply(.setConnectionBudget(appKey: "k", ConnectionBudget(requestsPerSecond: 5, burst: 9)), context: Self.app)
        #expect(m.snapshot().first == 5)
        _ = m.apply(.setWebhooks(appKey: "k", Self.full), context: Self.app)
        let six = m.snapshot()
        #expect(six.first == 6)
        #expect(try MetaState(restoring: six) == m)
        for cut in 0..<six.count { #expect(throws: (any Error).self) { try MetaState(restoring: Array(six[..<cut])) } }
        // Webhooks without budgets.
        _ = m.apply(.setConnectionBudget(appKey: "k", nil), context: Self.app)
        #expect(m.snapshot().first == 6)
        #expect(try MetaState(restoring: m.snapshot()) == m)
        _ = m.apply(.setWebhooks(appKey: "k", nil), context: Self.app)
        #expect(m.snapshot().first == 4)
    }

    @Test func W1_commandsRoundTripTheCodec() throws {
        for settings in [Self.full, WebhookSettings(enabled: false, url: "http://h/", preSendRooms: .all),
                         WebhookSettings(url: "http://[2001:db8::1]:8080/x")] {
            let c = MetaCommand.setWebhooks(appKey: "k", settings)
            #expect(try MetaCommand(decoding: c.encoded()) == c)
        }
        #expect(try MetaCommand(decoding: MetaCommand.setWebhooks(appKey: "k", nil).encoded()) == .setWebhooks(appKey: "k", nil))
        // An event name this version does not know does not read.
        var w = ByteWriter()
        w.write(UInt8(14)); w.write("k"); w.write(true); w.write(true); w.write("http://h/")
        w.write(UInt64(1)); w.write("room.teleport")
        #expect(throws: CodecError.self) { try MetaCommand(decoding: w.bytes) }
    }

    @Test func W3_whichMessagesAreCheckedBeforeSending() {
        #expect(Self.full.checksBeforeSending(roomId: "lobby"))
        #expect(!Self.full.checksBeforeSending(roomId: "hall"))
        #expect(WebhookSettings(url: "http://h/", preSendRooms: .all).checksBeforeSending(roomId: "hall"))
        #expect(!WebhookSettings(url: "http://h/").checksBeforeSending(roomId: "lobby"))
        #expect(!WebhookSettings(enabled: false, url: "http://h/", preSendRooms: .all).checksBeforeSending(roomId: "hall"))
    }

    @Test func W1_targetsTheNodeCalls() throws {
        func target(_ url: String) -> WebhookTarget { WebhookTarget(url: url)! }
        let rule = WebhookTargetRule.publicOnly
        #expect(rule.refusal(target("https://hooks.example.com/x")) == nil)
        #expect(rule.refusal(target("http://93.184.216.34:8080/")) == nil)
        #expect(rule.refusal(target("http://[2001:db8::1]/")) == nil)
        for refused in ["http://127.0.0.1:7101/", "http://localhost/", "http://api.localhost/", "http://10.1.2.3/",
                        "http://172.20.0.5/", "http://192.168.1.1/", "http://169.254.169.254/latest/meta-data",
                        "http://100.64.0.1/", "http://0.0.0.0/", "http://[::1]:7101/", "http://[fd00::5]/",
                        "http://[fe80::1]/", "http://[::ffff:127.0.0.1]/"] {
            #expect(rule.refusal(target(refused)) != nil, "\(refused) was allowed")
        }
        let local = try #require(WebhookTargetRule(parsing: "127.0.0.1, ::1,localhost, 10.0.0.0/8"))
        #expect(local.refusal(target("http://127.0.0.1:9000/")) == nil)
        #expect(local.refusal(target("http://localhost:9000/")) == nil)
        #expect(local.refusal(target("http://[::1]:9000/")) == nil)
        #expect(local.refusal(target("http://10.200.0.9/")) == nil)
        #expect(local.refusal(target("http://127.0.0.2/")) != nil)
        #expect(local.refusal(target("http://192.168.0.1/")) != nil)
        #expect(try #require(WebhookTargetRule(parsing: "any")).refusal(target("http://192.168.0.1/")) == nil)
        #expect(WebhookTargetRule(parsing: "10.0.0.0/33") == nil)
        #expect(WebhookTargetRule(parsing: "bad host!") == nil)
        #expect(target("HTTPS://Hooks.Example.COM/").host == "hooks.example.com")
        #expect(target("http://h/").port == 80 && target("https://h/").port == 443 && target("http://h:81").port == 81)
        #expect(target("http://h:81").path == "/" && target("https://h/a/b?x=1").path == "/a/b"
                && target("http://[::1]:9/p?q").path == "/p")
    }
}
