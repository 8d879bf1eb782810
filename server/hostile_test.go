package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

const pingBody = `{"jsonrpc":"2.0","id":5,"method":"ping"}`

// liveSessions counts the sessions mcp-go holds state for.
type liveSessions struct{ n atomic.Int64 }

// mcpServer is a bare mcp-go server (initialize is all a stranger needs)
// whose hooks count the sessions mcp-go registers and forgets.
func (l *liveSessions) mcpServer() *mcpserver.MCPServer {
	return mcpserver.NewMCPServer("ctalk", testVersion, mcpserver.WithHooks(l.hooks()))
}

func (l *liveSessions) hooks() *mcpserver.Hooks {
	hooks := &mcpserver.Hooks{}
	hooks.AddOnRegisterSession(func(context.Context, mcpserver.ClientSession) { l.n.Add(1) })
	hooks.AddOnUnregisterSession(func(context.Context, mcpserver.ClientSession) { l.n.Add(-1) })
	return hooks
}

// initializeWith is an initialize request whose clientInfo name is size bytes.
func initializeWith(size int) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"` + strings.Repeat("n", size) + `","version":"0"}}}`
}

// flood sends n copies of body to url, parallel at a time, and counts the
// answers by status.
func flood(t *testing.T, url, body string, n, parallel int) map[int]int {
	t.Helper()
	var mu sync.Mutex
	statuses := map[int]int{}
	work := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: parallel}}
	defer client.CloseIdleConnections()
	for range parallel {
		wg.Go(func() {
			for range work {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
				req.Header = mcpHeader()
				status := 0
				if resp, err := client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the status counts
					resp.Body.Close()
					status = resp.StatusCode
				}
				mu.Lock()
				statuses[status]++
				mu.Unlock()
			}
		})
	}
	for range n {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	return statuses
}

type heap struct{ inUse, sys uint64 }

func readHeap(gc bool) heap {
	if gc {
		runtime.GC()
		runtime.GC()
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return heap{m.HeapInuse, m.Sys}
}

func (h heap) String() string {
	return fmt.Sprintf("HeapInuse %d MiB, Sys %d MiB", h.inUse>>20, h.sys>>20)
}

// TestInitializeFloodKeepsNoState: strangers sending initialize with a huge
// clientInfo leave no session state behind. With CTALK_HOSTILE_MEASURE=1 it
// sends 2,000 of ~900 KB, 8 at a time, and prints the heap before, after,
// and after a GC; otherwise 50, and asserts only what is kept.
func TestInitializeFloodKeepsNoState(t *testing.T) {
	n, size, parallel := 50, 900_000, 8
	measure := os.Getenv("CTALK_HOSTILE_MEASURE") == "1"
	if measure {
		n = 2000
	} else {
		t.Parallel()
	}
	var live liveSessions
	h, tracked := handler(Config{Store: sqliteStore(t), MCP: live.mcpServer()})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	before := readHeap(true)
	statuses := flood(t, srv.URL+"/mcp", initializeWith(size), n, parallel)
	after := readHeap(false)
	afterGC := readHeap(true)
	if measure {
		t.Logf("%d initialize of %d KB clientInfo, %d at a time: answers %v; sessions kept %d", n, size/1000, parallel, statuses, live.n.Load())
		t.Logf("before %v; after %v; after GC %v", before, after, afterGC)
	}
	if got := live.n.Load(); got != 0 || tracked.live() != 0 {
		t.Errorf("after %d initialize with a %d KB clientInfo, mcp-go keeps %d sessions (ctalk counts %d), want 0",
			n, size/1000, got, tracked.live())
	}
	if statuses[http.StatusBadRequest] != n {
		t.Errorf("answers to %d initialize with a %d KB clientInfo = %v, want all 400", n, size/1000, statuses)
	}
	if measure { // the largest clientInfo accepted, to the session cap
		statuses := flood(t, srv.URL+"/mcp", initializeWith(maxClientInfoBytes-100), n, parallel)
		t.Logf("%d initialize of %d B clientInfo: answers %v; sessions kept %d (cap %d); after GC %v",
			n, maxClientInfoBytes-100, statuses, live.n.Load(), DefaultMaxSessions, readHeap(true))
		live.n.Store(0) // the checks below count from an empty server
		h, tracked = handler(Config{Store: sqliteStore(t), MCP: live.mcpServer()})
		srv = httptest.NewServer(h)
		t.Cleanup(srv.Close)
	}
	status, res := postMCP(t, srv.URL, initializeWith(maxClientInfoBytes+1), mcpHeader())
	if status != http.StatusBadRequest || res.Error == nil || !strings.Contains(res.Error.Message, "clientInfo too large") {
		t.Errorf("initialize with clientInfo just over the limit = %d %+v, want 400 and a JSON-RPC error \"clientInfo too large\"", status, res)
	}
	if status, res := postMCP(t, srv.URL, initializeWith(1000), mcpHeader()); status != http.StatusOK || res.Error != nil || live.n.Load() != 1 {
		t.Errorf("initialize with a 1 KB clientInfo = %d %+v, %d sessions; want 200, a result and one session", status, res, live.n.Load())
	}
}

// TestSessionsBounded: a replica remembers at most MaxSessions sessions,
// forgetting the least recently used first; ids it never minted leave
// nothing behind; a forgotten session's client carries on.
func TestSessionsBounded(t *testing.T) {
	t.Parallel()
	var live liveSessions
	h, tracked := handler(Config{Store: sqliteStore(t), MCP: live.mcpServer(), MaxSessions: 3})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	initialize := func() http.Header {
		t.Helper()
		resp, b := do(t, http.MethodPost, srv.URL+"/mcp", initializeBody, mcpHeader())
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize = %d %s, want 200 and a session id", resp.StatusCode, b)
		}
		return mcpHeader("Mcp-Session-Id", resp.Header.Get("Mcp-Session-Id"))
	}
	remembered := func(h http.Header) bool {
		tracked.mu.Lock()
		defer tracked.mu.Unlock()
		e := tracked.known[h.Get("Mcp-Session-Id")]
		return e != nil && e.minted != nil
	}
	first, kept := initialize(), initialize()
	for range 8 {
		initialize()
		if status, res := postMCP(t, srv.URL, pingBody, kept); status != http.StatusOK || res.Error != nil { // kept is in use, so the others go first
			t.Fatalf("ping = %d %+v, want 200 with a result", status, res)
		}
	}
	if live.n.Load() != 3 || tracked.live() != 3 {
		t.Errorf("after 10 initialize with MaxSessions 3, mcp-go keeps %d sessions and ctalk %d, want 3", live.n.Load(), tracked.live())
	}
	if !remembered(kept) || remembered(first) {
		t.Errorf("session in use remembered %v, first idle one remembered %v; want the least recently used forgotten first",
			remembered(kept), remembered(first))
	}
	if status, res := postMCP(t, srv.URL, pingBody, first); status != http.StatusOK || res.Error != nil {
		t.Errorf("ping in a forgotten session = %d %+v, want 200 with a result", status, res)
	}
	for i := range 20 { // well-formed ids this replica never minted
		h := mcpHeader("Mcp-Session-Id", fmt.Sprintf("mcp-session-00000000-0000-4000-8000-%012d", i))
		if status, res := postMCP(t, srv.URL, pingBody, h); status != http.StatusOK || res.Error != nil {
			t.Errorf("ping with an id minted elsewhere = %d %+v, want 200 with a result", status, res)
		}
	}
	tracked.mu.Lock()
	known := len(tracked.known)
	tracked.mu.Unlock()
	if known != 3 || live.n.Load() != 3 {
		t.Errorf("after requests with 21 ids not minted here, ctalk knows %d ids and mcp-go keeps %d sessions, want 3 and 3", known, live.n.Load())
	}
}

// peakHeap samples HeapInuse until stop is called, which returns the peak.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			if h := readHeap(false).inUse; h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(done); <-finished; return peak.Load() }
}

// TestLargeBodiesMeasure, with CTALK_HOSTILE_MEASURE=1 only, sends 100
// bodies of 1 MiB at once and prints the answers and the heap's peak.
func TestLargeBodiesMeasure(t *testing.T) {
	if os.Getenv("CTALK_HOSTILE_MEASURE") != "1" {
		t.Skip("set CTALK_HOSTILE_MEASURE=1 to measure")
	}
	var live liveSessions
	srv := httptest.NewServer(Handler(Config{Store: sqliteStore(t), MCP: live.mcpServer()}))
	t.Cleanup(srv.Close)
	body := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", DefaultMaxBodyBytes-100) + `"}}`
	before := readHeap(true)
	stop := peakHeap()
	statuses := flood(t, srv.URL+"/mcp", body, 100, 100)
	peak := stop()
	t.Logf("100 bodies of 1 MiB at once: answers %v; HeapInuse before %d MiB, peak %d MiB", statuses, before.inUse>>20, peak>>20)
}

// TestSessionsBoundedWhenInitializeStreams: an initialize answered as an
// SSE stream (the server notified the client meanwhile) carries no session
// id header, yet mcp-go registers the session; it counts all the same.
func TestSessionsBoundedWhenInitializeStreams(t *testing.T) {
	t.Parallel()
	var live liveSessions
	hooks := live.hooks()
	mcpSrv := mcpserver.NewMCPServer("ctalk", testVersion, mcpserver.WithHooks(hooks))
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcpgo.InitializeRequest, _ *mcpgo.InitializeResult) {
		mcpSrv.SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": "hi"}) //nolint:errcheck // best effort
	})
	h, tracked := handler(Config{Store: sqliteStore(t), MCP: mcpSrv, MaxSessions: 2})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for range 6 {
		resp, b := do(t, http.MethodPost, srv.URL+"/mcp", initializeBody, mcpHeader())
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") ||
			resp.Header.Get("Mcp-Session-Id") != "" {
			t.Fatalf("initialize = %d %v %s, want 200 as an SSE stream without a session id header (the case tested)", resp.StatusCode, resp.Header, b)
		}
	}
	if live.n.Load() != 2 || tracked.live() != 2 {
		t.Errorf("after 6 streamed initialize with MaxSessions 2, mcp-go keeps %d sessions and ctalk %d, want 2", live.n.Load(), tracked.live())
	}
}
