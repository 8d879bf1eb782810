package server_test

// How much one relay holds while many clients wait, and that it lets go.

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestThousandWaiters measures one relay with 1,000 users each waiting:
// memory, goroutines and database connections while they wait, and how long
// a question takes to reach each of them.
//
// Not parallel: the figures are the whole process's.
func TestThousandWaiters(t *testing.T) {
	if testing.Short() {
		t.Skip("measures 1,000 concurrent waits; skipped with -short")
	}
	if raceEnabled() {
		t.Skip("measures 1,000 concurrent waits; the race detector makes the figures meaningless (run without -race)")
	}
	const waiters = 1000
	forEachBackendInTurn(t, func(t *testing.T, s db.Store, app string) {
		backend := s.Backend()
		u := relayURL(t, s)
		ids := make([]string, waiters+1)
		ids[0] = "asker"
		for i := 1; i <= waiters; i++ {
			ids[i] = fmt.Sprintf("user%04d", i)
		}
		tok := seedUsers(t, s, "acme", ids...)
		waitFor(t, u, tok["asker"], 1, "latest") // warm up the notifier
		waitClient.CloseIdleConnections()
		runtime.GC()
		before := sample(t, s, app)

		type done struct {
			user   int
			at     time.Time
			events int
			err    error
		}
		results := make(chan done, waiters)
		for i, id := range ids[1:] {
			go func() {
				res, err := callTool(t.Context(), u, tok[id], "wait_for_messages", map[string]any{"timeout_seconds": 55, "cursor": "latest"})
				var out waitOut
				if err == nil {
					err = json.Unmarshal(res.StructuredContent, &out)
				}
				results <- done{i, time.Now(), len(out.Events), err}
			}()
		}
		settled, peak := quietConnections(s, 2*time.Second)
		runtime.GC()
		waiting := sample(t, s, app)
		t.Logf("%s: before: %s", backend, before)
		t.Logf("%s: %d waiting (settled within %v, pool peak %d connections): %s",
			backend, waiters, settled.Round(time.Millisecond), peak, waiting)
		t.Logf("%s: per waiter, client and server together in this process: %.1f KiB RSS, %.1f KiB Go heap, %.1f goroutines",
			backend, float64(waiting.rssKiB-before.rssKiB)/waiters, float64(waiting.heapKiB-before.heapKiB)/waiters,
			float64(waiting.goroutines-before.goroutines)/waiters)
		if waiting.inUse != 0 {
			t.Errorf("%d database connections in use while %d waits wait, want 0", waiting.inUse, waiters)
		}

		// A question to each: every waiter returns with it.
		sent := time.Now()
		askedAt := make([]time.Time, waiters) // when each question committed (ask_person answered)
		var wg sync.WaitGroup
		next := make(chan int)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					if _, err := callTool(t.Context(), u, tok["asker"], "ask_person", map[string]any{"to_user_id": ids[i+1], "question": "ping"}); err != nil {
						t.Errorf("ask %s: %v", ids[i+1], err)
					}
					askedAt[i] = time.Now()
				}
			}()
		}
		for i := range waiters {
			next <- i
		}
		close(next)
		wg.Wait()
		asked := time.Since(sent)
		latencies := make([]time.Duration, 0, waiters)
		for range waiters {
			d := <-results
			if d.err != nil || d.events != 1 {
				t.Errorf("a waiter returned %d events, %v; want its question", d.events, d.err)
				continue
			}
			latencies = append(latencies, max(0, d.at.Sub(askedAt[d.user])))
		}
		slices.Sort(latencies)
		if len(latencies) > 0 {
			pct := func(p float64) time.Duration {
				return latencies[int(p*float64(len(latencies)-1))].Round(time.Millisecond)
			}
			t.Logf("%s: %d questions asked in %v (8 at a time); waiter returned after its question committed: p50 %v, p99 %v, max %v",
				backend, waiters, asked.Round(time.Millisecond), pct(0.5), pct(0.99), pct(1))
		}
		waitClient.CloseIdleConnections()
		t.Logf("%s: after: %s", backend, sample(t, s, app))
	})
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// forEachBackendInTurn runs fn on a fresh store of each backend, one after
// the other (tests that measure the whole process must run alone). On
// PostgreSQL, app is the application_name that tags the store's connections.
func forEachBackendInTurn(t *testing.T, fn func(t *testing.T, s db.Store, app string)) {
	for _, backend := range dbtest.Backends {
		t.Run(backend, func(t *testing.T) {
			cfg := dbtest.NewConfig(t, backend)
			var app string
			if cfg.DatabaseURL != "" {
				cfg.DatabaseURL, app = dbtest.WithAppName(t, cfg.DatabaseURL)
			}
			fn(t, dbtest.Open(t, cfg), app)
		})
	}
}

// quietConnections waits until no pooled connection has been in use for
// quiet (at most 30 s) and returns how long the waits took to settle and the
// most connections the pool had open meanwhile.
func quietConnections(s db.Store, quiet time.Duration) (settled time.Duration, peakOpen int) {
	start := time.Now()
	calm := time.Now()
	for time.Since(start) < 30*time.Second {
		open, inUse := s.Connections()
		peakOpen = max(peakOpen, open)
		if inUse > 0 {
			calm = time.Now()
		} else if time.Since(calm) >= quiet {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return calm.Sub(start), peakOpen
}

// usage is one sample of the process and its database connections.
type usage struct {
	rssKiB, heapKiB     int64
	goroutines          int
	open, inUse, server int
}

func (u usage) String() string {
	s := fmt.Sprintf("RSS %.1f MiB, Go heap %.1f MiB, %d goroutines; pool: %d connections open, %d in use",
		float64(u.rssKiB)/1024, float64(u.heapKiB)/1024, u.goroutines, u.open, u.inUse)
	if u.server >= 0 {
		s += fmt.Sprintf("; PostgreSQL sees %d connections", u.server)
	}
	return s
}

func sample(t *testing.T, s db.Store, app string) usage {
	t.Helper()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u := usage{rssKiB: rssKiB(t), heapKiB: int64(ms.HeapInuse / 1024), goroutines: runtime.NumGoroutine(), server: -1}
	u.open, u.inUse = s.Connections()
	if app != "" {
		u.server, _ = dbtest.Connections(t, os.Getenv(dbtest.PostgresURLEnv), app)
	}
	return u
}

// rssKiB reads this process's resident set size from /proc/self/status.
func rssKiB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// settleGoroutines waits (up to 5 s) for the goroutine count to fall to
// target, or to stop falling when target is 0, and returns it.
func settleGoroutines(target int) int {
	deadline := time.Now().Add(5 * time.Second)
	n, prev := runtime.NumGoroutine(), -1
	for time.Now().Before(deadline) {
		if (target > 0 && n <= target) || (target == 0 && n == prev) {
			return n
		}
		time.Sleep(100 * time.Millisecond)
		prev, n = n, runtime.NumGoroutine()
	}
	return n
}
