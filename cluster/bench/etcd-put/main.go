// etcd-put: puts of a fixed size at a fixed concurrency against an etcd cluster, for the side-by-side
// comparison in docs/benchmarks.md. Built from Debian's etcd client sources (golang-etcd-server-dev) by
// cluster/bench/replicate-vs-etcd.sh; prints one line of JSON per run.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/clientv3"
)

func main() {
	endpoints := flag.String("endpoints", "127.0.0.1:2379", "comma-separated client URLs")
	clients := flag.Int("clients", 1, "concurrent requests in flight")
	conns := flag.Int("conns", 1, "gRPC connections shared by the clients")
	seconds := flag.Float64("seconds", 10, "how long to run")
	size := flag.Int("size", 64, "value size in bytes")
	flag.Parse()

	eps := strings.Split(*endpoints, ",")
	var cs []*clientv3.Client
	for i := 0; i < *conns; i++ {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{eps[i%len(eps)]}, DialTimeout: 5 * time.Second})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer c.Close()
		cs = append(cs, c)
	}
	value := strings.Repeat("v", *size)
	deadline := time.Now().Add(time.Duration(*seconds * float64(time.Second)))
	var ops, errs int64
	lat := make([][]time.Duration, *clients)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := cs[w%len(cs)]
			for n := 0; time.Now().Before(deadline); n++ {
				t := time.Now()
				_, err := c.Put(context.Background(), fmt.Sprintf("room-%d/msg-%d", w%64, n), value)
				if err != nil {
					atomic.AddInt64(&errs, 1)
					continue
				}
				lat[w] = append(lat[w], time.Since(t))
				atomic.AddInt64(&ops, 1)
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
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
	out, _ := json.Marshal(map[string]interface{}{
		"system": "etcd", "clients": *clients, "size": *size, "ops": ops, "errors": errs,
		"seconds": elapsed, "opsPerSecond": float64(ops) / elapsed,
		"p50ms": pct(0.50), "p99ms": pct(0.99), "p999ms": pct(0.999),
	})
	fmt.Println(string(out))
}
