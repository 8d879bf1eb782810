package bench

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

func TestBench(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		store := dbtest.Open(t, cfg)
		ts := httptest.NewServer(server.Handler(server.Config{Store: store, MCP: mcp.NewServer(store, mcp.Options{HashConcurrency: 4})}))
		t.Cleanup(ts.Close)

		var progress testkit.SyncBuffer
		bc := Config{Endpoint: ts.URL + "/mcp", Orgs: 2, Users: 3, Concurrency: 4, Duration: 2 * time.Second, Progress: &progress}
		rep, err := Run(t.Context(), bc)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		for _, tool := range Tools {
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
		rep.Print(&out, bc)
		for _, want := range append(Tools, "p99", "leaks: none") {
			if !strings.Contains(out.String(), want) {
				t.Errorf("report lacks %q:\n%s", want, out.String())
			}
		}
	})
}

func TestBenchURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://127.0.0.1:8000":       "http://127.0.0.1:8000/mcp",
		"https://relay.example.com/":  "https://relay.example.com/mcp",
		"https://relay.example.com/x": "https://relay.example.com/x",
	} {
		if got, err := URL(in); got != want || err != nil {
			t.Errorf("URL(%q) = %q, %v; want %q", in, got, err, want)
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
