import Foundation

/// What `parley dev` prints about the development app: its key and secret and a curl command that works
/// as pasted (it signs with the shell: a fresh Nonce and CurTime each run, CheckSum2 = HMAC-SHA256 of the
/// method, path, nonce, time and the body's SHA-256, docs/api.md).
struct DevAppBanner {
    var appKey: String
    var secret: String
    var url: String
    /// The local CA's certificate when the dev cluster serves TLS (curl must trust it).
    var caFile: String? = nil

    var text: String {
        """
        Server API app: AppKey \(appKey)  AppSecret \(secret)   (docs/api.md)
          Try it (creates a room):
            B='{"roomId":"lobby","creator":"alice","name":"Lobby"}'; N=$(date +%s%N) T=$(date +%s); \\
            D=$(printf '%s' "$B" | sha256sum | cut -d' ' -f1); \\
            S=$(printf 'parley-v2\\nPOST\\n/v1/room/create\\n%s\\n%s\\n%s' "$N" "$T" "$D" | openssl dgst -sha256 -hmac '\(secret)' | sed 's/^.*= //'); \\
            curl -s\(caFile.map { " --cacert \($0)" } ?? "") -X POST \(url)/v1/room/create -H 'Content-Type: application/json' \\
              -H 'AppKey: \(appKey)' -H "Nonce: $N" -H "CurTime: $T" -H "CheckSum2: $S" -d "$B"

        """
    }
}
