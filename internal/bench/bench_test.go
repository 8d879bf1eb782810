package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

// benchRelay serves a real relay over a fresh SQLite store, with wrap (if
// not nil) around its handler, and returns the relay's base URL.
func benchRelay(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	store := dbtest.Open(t, dbtest.NewConfig(t, "sqlite"))
	var h http.Handler = server.Handler(server.Config{Store: store, MCP: mcp.NewServer(store, mcp.Options{HashConcurrency: 4})})
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestBench(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		store := dbtest.Open(t, cfg)
		ts := httptest.NewServer(server.Handler(server.Config{Store: store, MCP: mcp.NewServer(store, mcp.Options{HashConcurrency: 4})}))
		t.Cleanup(ts.Close)

		var progress syncBuffer
		bc := benchConfig{Endpoint: ts.URL + "/mcp", Orgs: 2, Users: 3, Concurrency: 4, Duration: 2 * time.Second, Progress: &progress}
		rep, err := runBench(t.Context(), bc)
		if err != nil {
			t.Fatalf("runBench: %v", err)
		}
		for _, tool := range benchTools {
			s := rep.tool(tool)
			if s.Calls == 0 {
				t.Errorf("%s: 0 calls in %v, want some", tool, rep.Elapsed)
			}
			if s.Errors != 0 {
				t.Errorf("%s: %d errors, want 0: %v", tool, s.Errors, s.ErrorSamples)
			}
			if s.Calls > 0 && s.Percentile(0.99) < s.Percentile(0.50) {
				t.Errorf("%s: p99 %v < p50 %v", tool, s.Percentile(0.99), s.Percentile(0.50))
			}
		}
		if rep.Leaks != 0 {
			t.Errorf("leaks = %d (%s), want 0", rep.Leaks, rep.LeakSample)
		}
		if !strings.Contains(progress.String(), "calls") {
			t.Errorf("no progress lines on stderr:\n%s", progress.String())
		}
		var out bytes.Buffer
		rep.print(&out, bc)
		for _, want := range append(benchTools, "p99", "leaks: none") {
			if !strings.Contains(out.String(), want) {
				t.Errorf("report lacks %q:\n%s", want, out.String())
			}
		}
	})
}

// TestBenchCommand runs the command end to end: exit 0 and a report on stdout.
func TestBenchCommand(t *testing.T) {
	t.Parallel()
	base := benchRelay(t, nil)
	code, stdout, stderr := runCtalk(t, t.Context(), env{}, "bench", "--url", base, "--orgs", "1", "--users", "2",
		"--concurrency", "2", "--duration", "1s")
	if code != 0 {
		t.Fatalf("ctalk bench = exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "ask_person") || !strings.Contains(stdout, "leaks: none") {
		t.Errorf("ctalk bench stdout lacks the report:\n%s", stdout)
	}
}

// TestBenchDetectsLeaks puts a relay behind a proxy that rewrites organization
// 0's marker into organization 1's in every response: the bench must call
// that a leak and exit 3.
func TestBenchDetectsLeaks(t *testing.T) {
	t.Parallel()
	marker0 := regexp.MustCompile(`(bm[0-9a-f]{8}o)0x`)
	leaky := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			body := marker0.ReplaceAll(rec.Body.Bytes(), []byte("${1}1x"))
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			w.Write(body)
		})
	}
	base := benchRelay(t, leaky)
	code, stdout, stderr := runCtalk(t, t.Context(), env{}, "bench", "--url", base, "--orgs", "2", "--users", "2",
		"--concurrency", "2", "--duration", "1s")
	if code != benchExitLeak {
		t.Errorf("ctalk bench against a leaking relay = exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, benchExitLeak, stdout, stderr)
	}
	if !strings.Contains(stdout, "LEAK:") || !strings.Contains(stdout, "returned data of organization 1") {
		t.Errorf("ctalk bench stdout does not report the leak:\n%s", stdout)
	}
}

func TestBenchUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"bench"},
		{"bench", "--url", "ftp://x"},
		{"bench", "--url", "http://127.0.0.1:1", "--users", "1"},
		{"bench", "--url", "http://127.0.0.1:1", "--concurrency", "0"},
		{"bench", "--url", "http://127.0.0.1:1", "extra"},
		{"bench", "--nope"},
	} {
		code, stdout, stderr := runCtalk(t, t.Context(), env{}, args...)
		if code != 2 || stdout != "" || stderr == "" {
			t.Errorf("ctalk %q = exit %d, stdout %q, stderr %q; want exit 2 with an explanation on stderr", args, code, stdout, stderr)
		}
	}
	code, stdout, _ := runCtalk(t, t.Context(), env{}, "help")
	if code != 0 || !strings.Contains(stdout, "ctalk bench --url URL") {
		t.Errorf("ctalk help does not list ctalk bench:\n%s", stdout)
	}
}

func TestBenchURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://127.0.0.1:8000":       "http://127.0.0.1:8000/mcp",
		"https://relay.example.com/":  "https://relay.example.com/mcp",
		"https://relay.example.com/x": "https://relay.example.com/x",
	} {
		if got, err := benchURL(in); got != want || err != nil {
			t.Errorf("benchURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestLeakedOrg(t *testing.T) {
	t.Parallel()
	b := &bench{run: "0123abcd"}
	for _, tc := range []struct {
		body string
		own  int
		want int
	}{
		{`{"name":"Bench u1 bm0123abcdo1x"}`, 1, -1},
		{`{"name":"Bench u1 bm0123abcdo1x"}`, 11, 1},
		{`{"a":"bm0123abcdo11x","b":"bm0123abcdo1x"}`, 11, 1},
		{`{"a":"bm0123abcdo2"}`, 1, -1},  // cut short: not a marker
		{`{"a":"bm9999abcdo2x"}`, 1, -1}, // another run's
		{`{"a":"bm0123abcdo2x bm0123abcdo"}`, 2, -1},
	} {
		if got := b.leakedOrg([]byte(tc.body), tc.own); got != tc.want {
			t.Errorf("leakedOrg(%s, own %d) = %d, want %d", tc.body, tc.own, got, tc.want)
		}
	}
}

func TestHistogram(t *testing.T) {
	t.Parallel()
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.95, 950 * time.Millisecond}, {0.99, 990 * time.Millisecond}} {
		got := h.percentile(tc.p)
		if d := got - tc.want; d < -tc.want/30 || d > tc.want/30 {
			t.Errorf("percentile(%v) = %v, want %v within 3%%", tc.p, got, tc.want)
		}
	}
	for us := int64(0); us < 1<<20; us = us*2 + 1 {
		if lo, mid := bucketOf(us), bucketMid(bucketOf(us)); bucketOf(mid) != lo {
			t.Errorf("bucketMid(bucketOf(%d)) = %d lies in bucket %d, want %d", us, mid, bucketOf(mid), lo)
		}
	}
}

func TestSSEResponse(t *testing.T) {
	t.Parallel()
	stream := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\n\n"
	if got := string(sseResponse([]byte(stream), 7)); got != `{"jsonrpc":"2.0","id":7,"result":{"ok":true}}` {
		t.Errorf("sseResponse(id 7) = %q", got)
	}
	if got := sseResponse([]byte(stream), 8); got != nil {
		t.Errorf("sseResponse(id 8) = %q, want nil", got)
	}
}

// phaseWriter passes bench progress on and notes when the mix starts.
type phaseWriter struct {
	mixing atomic.Bool
	out    syncBuffer
}

func (p *phaseWriter) Write(b []byte) (int, error) {
	if strings.Contains(string(b), "driving the mix") {
		p.mixing.Store(true)
	}
	return p.out.Write(b)
}

// procStatus reads a kB field (VmRSS, VmHWM) of /proc/PID/status.
func procStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// TestCapacityRSS measures the resident memory of `ctalk serve` while 64
// clients (8 organizations × 8 users) drive the mix, on both backends. It
// prints figures and asserts nothing about them:
//
//	CTALK_CAPACITY=1 go test -run TestCapacityRSS -v ./cmd/ctalk
//
// CTALK_CAPACITY_GOMEMLIMIT, if set, is passed to the server as GOMEMLIMIT.
func TestCapacityRSS(t *testing.T) {
	if os.Getenv("CTALK_CAPACITY") == "" {
		t.Skip("a measurement, not a check: set CTALK_CAPACITY=1 to run it (see BENCHMARKS.md)")
	}
	bin := buildCtalk(t, "rss")
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		env := []string{"RELAY_DB_PATH=" + cfg.SQLitePath}
		if cfg.DatabaseURL != "" {
			env = []string{"DATABASE_URL=" + cfg.DatabaseURL}
		}
		if v := os.Getenv("CTALK_CAPACITY_GOMEMLIMIT"); v != "" {
			env = append(env, "GOMEMLIMIT="+v)
		}
		p := startServe(t, bin, env...)
		pid := p.cmd.Process.Pid
		idle := procStatus(pid, "VmRSS")
		progress := &phaseWriter{}
		var setupMax, mixMax, samples, sum int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for p.cmd.ProcessState == nil {
				select {
				case <-time.After(100 * time.Millisecond):
				case <-p.exited:
					return
				}
				rss := procStatus(pid, "VmRSS")
				if progress.mixing.Load() {
					mixMax = max(mixMax, rss)
					samples++
					sum += rss
				} else {
					setupMax = max(setupMax, rss)
				}
				if rss == 0 {
					return
				}
			}
		}()
		rep, err := runBench(t.Context(), benchConfig{Endpoint: p.base + "/mcp", Orgs: 8, Users: 8, Concurrency: 64,
			Duration: 15 * time.Second, Progress: progress})
		hwm := procStatus(pid, "VmHWM")
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-done
		if err != nil {
			t.Fatalf("bench: %v", err)
		}
		var out bytes.Buffer
		rep.print(&out, benchConfig{Endpoint: p.base + "/mcp", Orgs: 8, Users: 8, Concurrency: 64})
		t.Logf("\n%s", out.String())
		t.Logf("RESULT %s RSS with 64 clients: idle %.1f MiB; registration and logins (argon2id) max %.1f MiB; "+
			"mix max %.1f MiB, mean %.1f MiB; peak (VmHWM) %.1f MiB (target <= 64 MiB)",
			filepath.Base(t.Name()), mib(idle), mib(setupMax), mib(mixMax), mib(sum/max(samples, 1)), mib(hwm))
	})
}

func mib(kb int64) float64 { return float64(kb) / 1024 }
