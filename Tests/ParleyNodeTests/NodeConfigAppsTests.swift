import Testing
import ParleyNode

/// `--app KEY:SECRET`, `PARLEY_APPS` and the config file's `apps` all parse the same way.
@Suite struct NodeConfigAppsTests {
    @Test func appsParseFromRepeatedFlagsAndCommaLists() throws {
        let apps = try NodeConfig.parseApps(["dev:0123456789abcdef", "a:secret-secret-16, b:another-secret-16b"])
        #expect(apps == ["dev": "0123456789abcdef", "a": "secret-secret-16", "b": "another-secret-16b"])
        #expect(try NodeConfig.parseApps([]) == [:])
    }

    @Test func malformedAppsAreRefused() {
        for bad in ["nocolon", ":0123456789abcdef", "k:short", "k:" + String(repeating: "s", count: 129),
                    String(repeating: "k", count: 65) + ":0123456789abcdef"] {
            #expect(throws: NodeConfigError.self) { try NodeConfig.parseApps([bad]) }
        }
    }
}
