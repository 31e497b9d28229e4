// client-load: one load generator for both sides of cluster/bench/client-vs-jetstream.sh (issue 35). Writers,
// each with one message in flight and its own room (Parley) or subject (JetStream), spread round-robin over
// the servers, each awaiting its acknowledgement before the next: Parley's `sendMessage` answer over a
// WebSocket (docs/protocol.md), JetStream's PubAck. Built from Debian's sources (golang-github-nats-io-go-nats-dev,
// golang-github-gorilla-websocket-dev); prints one line of JSON per run.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"
)

type result struct {
	System       string  `json:"system"`
	Clients      int     `json:"clients"`
	Ops          int64   `json:"ops"`
	OpsPerSecond float64 `json:"opsPerSecond"`
	P50ms        float64 `json:"p50ms"`
	P99ms        float64 `json:"p99ms"`
	Errors       int64   `json:"errors"`
	BudgetWaits  int64   `json:"budgetWaits"`
	// Acknowledged writes including the warm-up second: what the servers' CPU over the whole run is divided by.
	AllOps int64 `json:"allOps"`
}

func main() {
	mode := flag.String("mode", "parley", "parley or jetstream")
	servers := flag.String("servers", "", "comma-separated: ws://host:port/ws (parley) or nats://host:port (jetstream)")
	clients := flag.Int("clients", 1, "writers, one message in flight each")
	seconds := flag.Float64("seconds", 10, "how long to measure (after a one-second warm-up)")
	size := flag.Int("size", 100, "message body bytes")
	appKey := flag.String("app", "bench", "parley: the app key the writers enter with")
	level := flag.String("level", "", "parley: a prefix of this run's rooms and accounts (w<i>, token w<i>-token)")
	createStream := flag.Bool("create-stream", false, "jetstream: create the R3 file stream ROOMS (rooms.>) and exit")
	flag.Parse()
	urls := strings.Split(*servers, ",")
	if *createStream {
		if err := makeStream(urls[0]); err != nil {
			fmt.Fprintln(os.Stderr, "stream:", err)
			os.Exit(1)
		}
		return
	}
	body := strings.Repeat("x", *size)
	warm := time.Now().Add(time.Second)
	stop := warm.Add(time.Duration(*seconds * float64(time.Second)))
	lat := make([][]time.Duration, *clients)
	var errs, waits, allOps int64
	var wg sync.WaitGroup
	ready := make(chan error, *clients)
	start := make(chan struct{})
	for w := 0; w < *clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var send func() error
			var err error
			if *mode == "jetstream" {
				send, err = jetStreamWriter(urls[w%len(urls)], w, body)
			} else {
				send, err = parleyWriter(urls[w%len(urls)], *appKey, *level, w, body, &waits)
			}
			ready <- err
			if err != nil {
				return
			}
			<-start
			for time.Now().Before(stop) {
				t := time.Now()
				if err := send(); err != nil {
					atomic.AddInt64(&errs, 1)
					continue
				}
				atomic.AddInt64(&allOps, 1)
				if t.After(warm) {
					lat[w] = append(lat[w], time.Since(t))
				}
			}
		}(w)
	}
	for w := 0; w < *clients; w++ {
		if err := <-ready; err != nil {
			fmt.Fprintln(os.Stderr, "writer:", err)
			os.Exit(1)
		}
	}
	close(start)
	wg.Wait()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000
	}
	r := result{System: *mode, Clients: *clients, Ops: int64(len(all)), OpsPerSecond: float64(len(all)) / *seconds,
		P50ms: pct(0.5), P99ms: pct(0.99), Errors: errs, BudgetWaits: waits, AllOps: allOps}
	line, _ := json.Marshal(r)
	fmt.Println(string(line))
}

// makeStream creates the stream every writer publishes to: 3 replicas, file storage (each server syncs every
// write: `sync_interval: always` in its configuration). Retried while the cluster elects its meta leader.
func makeStream(url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := addStream(url)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func addStream(url string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		return err
	}
	_, err = js.AddStream(&nats.StreamConfig{Name: "ROOMS", Subjects: []string{"rooms.>"}, Replicas: 3,
		Storage: nats.FileStorage})
	return err
}

// jetStreamWriter publishes to its own subject of the ROOMS stream and waits for the PubAck (stored on a
// quorum of the R3 stream's replicas).
func jetStreamWriter(url string, w int, body string) (func() error, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, err
	}
	js, err := nc.JetStream()
	if err != nil {
		return nil, err
	}
	subject := fmt.Sprintf("rooms.w%d", w)
	data := []byte(body)
	return func() error {
		_, err := js.Publish(subject, data)
		return err
	}, nil
}

// parleyWriter says hello, enters its own room as account w<i>, then sends and reads until its answer (room
// events in between are skipped, as the JetStream publisher receives nothing). A 416 (the connection's
// request budget) is waited out and sent again, as a client does, and counted.
func parleyWriter(url, appKey, level string, w int, body string, waits *int64) (func() error, error) {
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		return nil, err
	}
	id := 0
	call := func(op map[string]any) (map[string]any, error) {
		id++
		op["id"] = id
		b, _ := json.Marshal(op)
		if err := conn.WriteMessage(websocket.TextMessage, b); err != nil {
			return nil, err
		}
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				return nil, err
			}
			var frame map[string]any
			if json.Unmarshal(data, &frame) != nil {
				continue
			}
			if _, event := frame["event"]; event {
				continue
			}
			if got, ok := frame["id"].(float64); ok && int(got) == id {
				return frame, nil
			}
		}
	}
	if _, err := call(map[string]any{"op": "hello", "versions": []int{1}}); err != nil {
		return nil, err
	}
	account := fmt.Sprintf("%sw%d", level, w)
	room := fmt.Sprintf("%sroom-%d", level, w)
	entered, err := call(map[string]any{"op": "enter", "roomId": room, "nickname": account,
		"auth": map[string]any{"mode": "independent", "appKey": appKey, "account": account, "token": account + "-token"}})
	if err != nil {
		return nil, err
	}
	if ok, _ := entered["ok"].(bool); !ok {
		return nil, fmt.Errorf("enter %s: %v", room, entered)
	}
	n := 0
	return func() error {
		n++
		for {
			answer, err := call(map[string]any{"op": "sendMessage", "roomId": room, "type": "text", "body": body,
				"clientMessageId": fmt.Sprintf("%d", n)})
			if err != nil {
				return err
			}
			if ok, _ := answer["ok"].(bool); ok {
				return nil
			}
			e, _ := answer["error"].(map[string]any)
			if code, _ := e["code"].(float64); code == 416 {
				atomic.AddInt64(waits, 1)
				wait, _ := e["retryAfterMs"].(float64)
				time.Sleep(time.Duration(wait+1) * time.Millisecond)
				continue
			}
			return fmt.Errorf("sendMessage: %v", answer)
		}
	}, nil
}
