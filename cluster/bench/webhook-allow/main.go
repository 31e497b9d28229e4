// A pre-send receiver that answers at once (issue 36's benchmark, cluster/bench/presend_cost.py): it checks each
// call's CheckSum2 like cluster/webhooks/receiver.py (parley-v2, method, path, nonce, time and the body's
// SHA-256, keyed with the app's secret) and answers {"action":"allow"}; GET /calls answers how many calls it
// verified and refused. Go's net/http on every core, so the benchmark measures Parley's cost, not the receiver's.
//
//	GO111MODULE=off go build -o webhook-allow cluster/bench/webhook-allow/main.go
//	webhook-allow --port 9099 --app-secret SECRET
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"sync/atomic"
)

func main() {
	port := flag.Int("port", 9099, "port on 127.0.0.1")
	secret := flag.String("app-secret", "", "the app's secret")
	flag.Parse()
	var verified, refused atomic.Int64
	http.HandleFunc("/calls", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"verified": %d, "refused": %d}`, verified.Load(), refused.Load())
	})
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || r.Method != http.MethodPost {
			refused.Add(1)
			http.Error(w, `{"error": "bad request"}`, http.StatusBadRequest)
			return
		}
		digest := sha256.Sum256(body)
		text := "parley-v2\nPOST\n" + r.URL.Path + "\n" + r.Header.Get("Nonce") + "\n" + r.Header.Get("CurTime") + "\n" + hex.EncodeToString(digest[:])
		mac := hmac.New(sha256.New, []byte(*secret))
		mac.Write([]byte(text))
		if !hmac.Equal([]byte(hex.EncodeToString(mac.Sum(nil))), []byte(r.Header.Get("CheckSum2"))) {
			refused.Add(1)
			http.Error(w, `{"error": "bad signature"}`, http.StatusUnauthorized)
			return
		}
		verified.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"action": "allow"}`))
	})
	log.Fatal(http.ListenAndServe(fmt.Sprintf("127.0.0.1:%d", *port), nil))
}
