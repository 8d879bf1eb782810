package server

// Tests for claims of docs/security.md that no other test would catch if
// they stopped being true (the "Gaps" of notes/claims.md). Documented
// numbers are literals here, not the code's constants.

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
)

// initializeWithCapabilities is an initialize whose capabilities object is
// exactly size bytes of JSON.
func initializeWithCapabilities(size int) string {
	const head, tail = `{"experimental":{"pad":"`, `"}}`
	caps := head + strings.Repeat("c", size-len(head)-len(tail)) + tail
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":` + caps + `,"clientInfo":{"name":"claims","version":"0"}}}`
}

// TestClaimCapabilitiesLimit (S51): an initialize with capabilities over
// 8 KiB is refused with 400 before any session is kept; 8 KiB is accepted.
func TestClaimCapabilitiesLimit(t *testing.T) {
	t.Parallel()
	var live liveSessions
	h, tracked := handler(Config{Store: sqliteStore(t), MCP: live.mcpServer()})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	status, res := postMCP(t, srv.URL, initializeWithCapabilities(8<<10+1), mcpHeader())
	if status != http.StatusBadRequest || res.Error == nil || !strings.Contains(res.Error.Message, "capabilities too large") {
		t.Errorf("initialize with capabilities of 8 KiB + 1 = %d %+v, want 400 \"capabilities too large\"", status, res)
	}
	if live.n.Load() != 0 || tracked.live() != 0 {
		t.Errorf("the refused initialize left %d sessions (%d tracked), want 0", live.n.Load(), tracked.live())
	}
	if status, res := postMCP(t, srv.URL, initializeWithCapabilities(8<<10), mcpHeader()); status != http.StatusOK || res.Error != nil || live.n.Load() != 1 {
		t.Errorf("initialize with capabilities of exactly 8 KiB = %d %+v, %d sessions; want 200 and one session", status, res, live.n.Load())
	}
}

// TestClaimSessionDefaults (S52): with no CTALK_MAX_SESSIONS a replica
// remembers 500 sessions, not 501; a session idle for more than 30 minutes
// is forgotten, one idle for less is kept.
func TestClaimSessionDefaults(t *testing.T) {
	t.Parallel()
	var live liveSessions
	h, tracked := handler(Config{Store: sqliteStore(t), MCP: live.mcpServer()})
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	tracked.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	initialize := func() {
		t.Helper()
		if resp, b := do(t, http.MethodPost, srv.URL+"/mcp", initializeBody, mcpHeader()); resp.StatusCode != http.StatusOK {
			t.Fatalf("initialize = %d %s", resp.StatusCode, b)
		}
	}
	initialize()
	advance(30*time.Minute - time.Second)
	initialize()
	if n := tracked.live(); n != 2 {
		t.Errorf("a session idle 29m59s was forgotten: %d remembered, want 2", n)
	}
	advance(2 * time.Second) // the first is now idle 30m01s
	initialize()
	if n, m := tracked.live(), live.n.Load(); n != 2 || m != 2 {
		t.Errorf("after 30m01s idle: %d sessions remembered (mcp-go %d), want 2 (the first forgotten)", n, m)
	}
	for range 499 {
		initialize()
	}
	if n, m := tracked.live(), live.n.Load(); n != 500 || m != 500 {
		t.Errorf("after 501 fresh initialize with no cap set: %d sessions remembered (mcp-go %d), want 500", n, m)
	}
}

// TestClaimBodyLimit (S59): with the default configuration a request body of
// 1 MiB is read, and 1 MiB + 1 byte gets 413.
func TestClaimBodyLimit(t *testing.T) {
	t.Parallel()
	srv := startServer(t, sqliteStore(t), Config{})
	body := func(size int) string {
		const head, tail = `{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":"`, `"}}`
		return head + strings.Repeat("p", size-len(head)-len(tail)) + tail
	}
	if resp, b := do(t, http.MethodPost, srv.URL+"/mcp", body(1<<20), mcpHeader()); resp.StatusCode == http.StatusRequestEntityTooLarge {
		t.Errorf("a body of exactly 1 MiB = %d %.200s, want it read", resp.StatusCode, b)
	}
	if resp, b := do(t, http.MethodPost, srv.URL+"/mcp", body(1<<20+1), mcpHeader()); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body of 1 MiB + 1 = %d %.200s, want 413", resp.StatusCode, b)
	}
}

// TestClaimCapDefaults (S53, S54, S55): the documented defaults. Driving 4,096
// concurrent requests or 8 MiB of held bodies in a unit test is not
// reasonable, so the values are pinned; handler applies each one when its
// setting is 0 (TestConcurrentRequestsCap and the others test the
// mechanism with small caps).
func TestClaimCapDefaults(t *testing.T) {
	t.Parallel()
	if DefaultMaxConcurrentRequests != 4096 || DefaultMaxRequestsPerAddress != 512 || DefaultMaxBodyBytesInFlight != 8<<20 {
		t.Errorf("defaults: %d concurrent requests, %d per address, %d body bytes in flight; documented 4096, 512, 8 MiB",
			DefaultMaxConcurrentRequests, DefaultMaxRequestsPerAddress, DefaultMaxBodyBytesInFlight)
	}
}

// TestClaimPerAddressCapIPv6 (S54): the per-address cap counts an IPv6
// client per /64: requests held by two addresses of one /64 fill it for a
// third address of that /64, not for another /64.
func TestClaimPerAddressCapIPv6(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 16), make(chan struct{})
	loopback, _ := ParseTrustedProxies("127.0.0.1, ::1")
	srv := httptest.NewServer(Handler(Config{Store: sqliteStore(t), MCP: blockingServer(started, release),
		MaxConcurrentRequests: 8, MaxRequestsPerAddress: 2, TrustedProxies: loopback}))
	t.Cleanup(srv.Close)
	from := func(addr string) http.Header {
		h := mcpHeader()
		h.Set("X-Forwarded-For", addr)
		return h
	}
	held := make(chan int, 2)
	for _, addr := range []string{"2001:db8:1:2::1", "2001:db8:1:2:ffff::9"} {
		go func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/mcp", strings.NewReader(blockCall(1)))
			req.Header = from(addr)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				held <- 0
				return
			}
			resp.Body.Close()
			held <- resp.StatusCode
		}()
	}
	<-started
	<-started
	resp, body := do(t, http.MethodPost, srv.URL+"/mcp", toolsListBody, from("2001:db8:1:2::abcd"))
	checkBusy(t, "a request from a /64 whose other addresses hold two", resp, body)
	if resp, body := do(t, http.MethodPost, srv.URL+"/mcp", toolsListBody, from("2001:db8:1:3::1")); resp.StatusCode != http.StatusOK {
		t.Errorf("a request from the next /64 = %d %s, want 200", resp.StatusCode, body)
	}
	close(release)
	for range 2 {
		<-held
	}
}

// TestClaimLogDurationAndErrors (S66, S67): each request line has the
// method, path, status and duration; an unexpected error (a closed
// database) is logged at ERROR level, without the password it was checking.
func TestClaimLogDurationAndErrors(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		var logs testkit.SyncBuffer
		logger := slog.New(slog.NewTextHandler(&logs, nil))
		broken, err := db.Open(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		broken.Close()
		h := newHandler(broken, Config{Logger: logger})
		const pw = "claims-Secret-Password-77"
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": map[string]any{"name": "login", "arguments": map[string]any{"org_id": "acme", "user_id": "umar", "password": pw}}})
		for _, b := range [][]byte{[]byte(initializeBody), body} {
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/mcp", bytes.NewReader(b))
			req.Header = mcpHeader()
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
		out := logs.String()
		requests := 0
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "msg=request") {
				requests++
				for _, want := range []string{"method=POST", "path=/mcp", "status=", " duration"} {
					if !strings.Contains(line, want) {
						t.Errorf("request line %q lacks %s", line, want)
					}
				}
			}
		}
		if requests != 2 {
			t.Errorf("%d request lines for 2 requests:\n%s", requests, out)
		}
		if !strings.Contains(out, "level=ERROR") {
			t.Errorf("a login on a closed database logged no ERROR line:\n%s", out)
		}
		if strings.Contains(out, pw) {
			t.Errorf("the log holds the password:\n%s", out)
		}
	})
}
