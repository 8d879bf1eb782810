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
	"github.com/ctalk/ctalk/internal/bench"
	"github.com/ctalk/ctalk/internal/testkit"
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
	if code != bench.ExitLeak {
		t.Errorf("ctalk bench against a leaking relay = exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, bench.ExitLeak, stdout, stderr)
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

// phaseWriter passes bench progress on and notes when the mix starts.
type phaseWriter struct {
	mixing atomic.Bool
	out    testkit.SyncBuffer
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
	bin := testkit.BuildCtalk(t, "rss")
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
		rep, err := bench.Run(t.Context(), bench.Config{Endpoint: p.base + "/mcp", Orgs: 8, Users: 8, Concurrency: 64,
			Duration: 15 * time.Second, Progress: progress})
		hwm := procStatus(pid, "VmHWM")
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-done
		if err != nil {
			t.Fatalf("bench: %v", err)
		}
		var out bytes.Buffer
		rep.Print(&out, bench.Config{Endpoint: p.base + "/mcp", Orgs: 8, Users: 8, Concurrency: 64})
		t.Logf("\n%s", out.String())
		t.Logf("RESULT %s RSS with 64 clients: idle %.1f MiB; registration and logins (argon2id) max %.1f MiB; "+
			"mix max %.1f MiB, mean %.1f MiB; peak (VmHWM) %.1f MiB (target <= 64 MiB)",
			filepath.Base(t.Name()), mib(idle), mib(setupMax), mib(mixMax), mib(sum/max(samples, 1)), mib(hwm))
	})
}

func mib(kb int64) float64 { return float64(kb) / 1024 }
