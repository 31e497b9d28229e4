import Foundation

/// What `parley dev` prints about the development app: its key and secret and a curl command that works
/// as pasted (it signs with the shell: a fresh Nonce and CurTime each run, CheckSum = sha1(secret nonce time)).
struct DevAppBanner {
    var appKey: String
    var secret: String
    var url: String

    var text: String {
        """
        Server API app: AppKey \(appKey)  AppSecret \(secret)   (docs/api.md)
          Try it (creates a room):
            N=$(date +%s%N) T=$(date +%s); S=$(printf '%s' "\(secret)$N$T" | sha1sum | cut -d' ' -f1); \\
            curl -s -X POST \(url)/v1/room/create -H 'Content-Type: application/json' \\
              -H 'AppKey: \(appKey)' -H "Nonce: $N" -H "CurTime: $T" -H "CheckSum: $S" \\
              -d '{"roomId":"lobby","creator":"alice","name":"Lobby"}'

        """
    }
}
