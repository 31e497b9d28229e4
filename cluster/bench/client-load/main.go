// client-load: one load generator for both sides of cluster/bench/client-vs-jetstream.sh (issue 35). Writers,
// each with one message in flight and its own room (Parley) or subject (JetStream), spread round-robin over
// the servers, each awaiting its acknowledgement before the next: Parley's `sendMessage` answer over a
// WebSocket (docs/protocol.md), JetStream's PubAck. Built from Debian's sources (golang-github-nats-io-go-nats-dev,
// golang-github-gorilla-websocket-dev); prints one line of JSON per run. With --per-connection K (Parley),
// K writers share one WebSocket (one account, a room each): their requests are in flight together on it,
// answers matched by id — a pipelined connection (issue 35 item 4).
package main

import (
	"encoding/json"
	"errors"
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

// runTag starts every clientMessageId of this run, so a later run's messages to the same rooms are new
// messages, not retries of an earlier run's (which the server answers with the original and does not store).
var runTag = fmt.Sprintf("%x-", time.Now().UnixNano())

// clientMessageID names a writer's n-th message of this run.
func clientMessageID(n int) string { return fmt.Sprintf("%s%d", runTag, n) }

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
	streamLeader := flag.Bool("stream-leader", false, "jetstream: print the server name of the ROOMS stream's leader and exit")
	perConnection := flag.Int("per-connection", 1, "parley: writers sharing one WebSocket (1-10: a user is in at most 10 rooms)")
	im := flag.Bool("im", false, "parley: one-to-one messages (imLogin, sendP2P to the next writer's account) instead of room messages")
	team := flag.Bool("team", false, "parley: team messages (imLogin, each writer's own team with the next writer in it, sendTeamMessage) instead of room messages")
	flag.Parse()
	if *team {
		*im = true
	}
	if *perConnection < 1 || *perConnection > 10 || (*im && *perConnection != 1) {
		fmt.Fprintln(os.Stderr, "--per-connection must be 1 … 10 (1 with --im: a connection is one user's device)")
		os.Exit(2)
	}
	urls := strings.Split(*servers, ",")
	if *createStream {
		if err := makeStream(urls[0]); err != nil {
			fmt.Fprintln(os.Stderr, "stream:", err)
			os.Exit(1)
		}
		return
	}
	if *streamLeader {
		name, err := leaderOfStream(urls[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, "stream info:", err)
			os.Exit(1)
		}
		fmt.Println(name)
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
	// Parley: the connections, one per --per-connection writers, each to its server round-robin.
	var shared []*sharedConn
	if *mode != "jetstream" {
		for c := 0; c*(*perConnection) < *clients; c++ {
			first := c * *perConnection
			conn, err := dialShared(urls[c%len(urls)], *appKey, fmt.Sprintf("%sw%d", *level, first))
			if err != nil {
				fmt.Fprintln(os.Stderr, "connection:", err)
				os.Exit(1)
			}
			shared = append(shared, conn)
		}
	}
	for w := 0; w < *clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var send func() error
			var err error
			if *mode == "jetstream" {
				send, err = jetStreamWriter(urls[w%len(urls)], w, body)
			} else if *team {
				send, err = teamWriter(shared[w], fmt.Sprintf("%sw%d", *level, (w+1)%*clients), body, &waits)
			} else if *im {
				send, err = imWriter(shared[w], fmt.Sprintf("%sw%d", *level, (w+1)%*clients), body, &waits)
			} else {
				send, err = parleyWriter(shared[w / *perConnection], *level, w, body, &waits)
			}
			ready <- err
			if err != nil {
				return
			}
			<-start
			for time.Now().Before(stop) {
				t := time.Now()
				if err := send(); err != nil {
					// The first few go to stderr, so a run with errors says what they were.
					if atomic.AddInt64(&errs, 1) <= 5 {
						fmt.Fprintln(os.Stderr, "error:", err)
					}
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

// leaderOfStream names the server that leads the ROOMS stream (its publishes are stored there first; a
// publisher connected elsewhere is forwarded to it), so a one-writer run can be placed at or away from it.
func leaderOfStream(url string) (string, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		return "", err
	}
	info, err := js.StreamInfo("ROOMS")
	if err != nil {
		return "", err
	}
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return "", fmt.Errorf("the stream has no leader yet")
	}
	return info.Cluster.Leader, nil
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

// sharedConn is one WebSocket that said hello and answers its writers' calls by id (a reader goroutine hands
// each answer to the call waiting for it; room events are skipped, as the JetStream publisher receives
// nothing). Its account is the first of its writers'; the others' rooms are entered with it.
type sharedConn struct {
	conn    *websocket.Conn
	appKey  string
	account string
	writeMu sync.Mutex
	mu      sync.Mutex
	pending map[int]chan map[string]any
	closed  error
	next    int64
}

func dialShared(url, appKey, account string) (*sharedConn, error) {
	conn, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		return nil, err
	}
	s := &sharedConn{conn: conn, appKey: appKey, account: account, pending: map[int]chan map[string]any{}}
	go s.read()
	if _, err := s.call(map[string]any{"op": "hello", "versions": []int{1}}); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *sharedConn) read() {
	for {
		_, data, err := s.conn.ReadMessage()
		if err != nil {
			s.mu.Lock()
			s.closed = err
			for id, ch := range s.pending {
				close(ch)
				delete(s.pending, id)
			}
			s.mu.Unlock()
			return
		}
		var frame map[string]any
		if json.Unmarshal(data, &frame) != nil {
			continue
		}
		if _, event := frame["event"]; event {
			continue
		}
		got, ok := frame["id"].(float64)
		if !ok {
			continue
		}
		s.mu.Lock()
		ch := s.pending[int(got)]
		delete(s.pending, int(got))
		s.mu.Unlock()
		if ch != nil {
			ch <- frame
		}
	}
}

func (s *sharedConn) call(op map[string]any) (map[string]any, error) {
	id := int(atomic.AddInt64(&s.next, 1))
	ch := make(chan map[string]any, 1)
	s.mu.Lock()
	if s.closed != nil {
		s.mu.Unlock()
		return nil, s.closed
	}
	s.pending[id] = ch
	s.mu.Unlock()
	op["id"] = id
	b, _ := json.Marshal(op)
	s.writeMu.Lock()
	err := s.conn.WriteMessage(websocket.TextMessage, b)
	s.writeMu.Unlock()
	if err != nil {
		return nil, err
	}
	frame, ok := <-ch
	if !ok {
		return nil, errors.New("the connection closed")
	}
	return frame, nil
}

// imWriter logs its connection in as its account's IM device, then sends one-to-one messages to `to` (another
// writer's account, so the message is stored on that user's shard and copied back to the sender's) and awaits
// each answer; a 416 is waited out as parleyWriter does.
func imWriter(conn *sharedConn, to string, body string, waits *int64) (func() error, error) {
	if err := imLogin(conn); err != nil {
		return nil, err
	}
	n := 0
	return func() error {
		n++
		return callWaitingOutBudget(conn, map[string]any{"op": "sendP2P", "to": to, "type": "text", "body": body,
			"clientMessageId": clientMessageID(n)}, waits)
	}, nil
}

// teamWriter logs its connection in, makes its own team (once: a later run finds it) with the next writer in it
// (so a message reaches two members' devices), then sends team messages to it and awaits each answer.
func teamWriter(conn *sharedConn, next string, body string, waits *int64) (func() error, error) {
	if err := imLogin(conn); err != nil {
		return nil, err
	}
	teamId := conn.account + "-team"
	// 14210: the team exists (an earlier run); 14213: the next writer is in it already (or is this writer).
	for _, op := range []map[string]any{
		{"op": "teamCreate", "teamId": teamId, "name": "Bench", "beInviteMode": "noAuth"},
		{"op": "teamInvite", "teamId": teamId, "targets": []string{next}},
	} {
		answer, err := conn.call(op)
		if err != nil {
			return nil, err
		}
		if ok, _ := answer["ok"].(bool); !ok {
			code := 0.0
			if e, _ := answer["error"].(map[string]any); e != nil {
				code, _ = e["code"].(float64)
			}
			if code != 14210 && code != 14213 {
				return nil, fmt.Errorf("%s %s: %v", op["op"], teamId, answer)
			}
		}
	}
	n := 0
	return func() error {
		n++
		return callWaitingOutBudget(conn, map[string]any{"op": "sendTeamMessage", "teamId": teamId, "type": "text", "body": body,
			"clientMessageId": clientMessageID(n)}, waits)
	}, nil
}

// imLogin makes the connection its account's IM device.
func imLogin(conn *sharedConn) error {
	login, err := conn.call(map[string]any{"op": "imLogin",
		"auth": map[string]any{"mode": "im", "appKey": conn.appKey, "account": conn.account, "token": conn.account + "-token"}})
	if err != nil {
		return err
	}
	if ok, _ := login["ok"].(bool); !ok {
		return fmt.Errorf("imLogin %s: %v", conn.account, login)
	}
	return nil
}

// callWaitingOutBudget sends `op` until it is answered ok; a 416 (the connection's or the app's send budget) is
// waited out, counted, and sent again, as a client does.
func callWaitingOutBudget(conn *sharedConn, op map[string]any, waits *int64) error {
	for {
		answer, err := conn.call(op)
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
		return fmt.Errorf("%v: %v", op["op"], answer)
	}
}

// parleyWriter enters its own room on its connection, then sends and awaits each answer. A 416 (the
// connection's request budget) is waited out and sent again, as a client does, and counted.
func parleyWriter(conn *sharedConn, level string, w int, body string, waits *int64) (func() error, error) {
	room := fmt.Sprintf("%sroom-%d", level, w)
	entered, err := conn.call(map[string]any{"op": "enter", "roomId": room, "nickname": conn.account,
		"auth": map[string]any{"mode": "independent", "appKey": conn.appKey, "account": conn.account, "token": conn.account + "-token"}})
	if err != nil {
		return nil, err
	}
	if ok, _ := entered["ok"].(bool); !ok {
		return nil, fmt.Errorf("enter %s: %v", room, entered)
	}
	n := 0
	return func() error {
		n++
		return callWaitingOutBudget(conn, map[string]any{"op": "sendMessage", "roomId": room, "type": "text", "body": body,
			"clientMessageId": clientMessageID(n)}, waits)
	}, nil
}
