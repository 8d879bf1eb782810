package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCapsFollowMemoryLimit: the caps left unset shrink under a Go memory
// limit, and the ones set are kept; setting the request cap gives one
// address the default share of it.
func TestCapsFollowMemoryLimit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		limit, setBudget     int64
		setRequests          int
		budget               int64
		requests, perAddress int
	}{
		{limit: 0, budget: 8 << 20, requests: 4096, perAddress: 512},
		{limit: 1 << 40, budget: 8 << 20, requests: 4096, perAddress: 512},
		{limit: 48 << 20, budget: 3 << 20, requests: 256, perAddress: 32},
		{limit: 8 << 20, budget: 512 << 10, requests: 64, perAddress: 8},
		// A request cap the operator set keeps the default share per
		// address (the handler never lets it exceed the cap itself).
		{limit: 48 << 20, setBudget: 12345678, setRequests: 9, budget: 12345678, requests: 9, perAddress: 512},
		{limit: 48 << 20, setRequests: 1000, budget: 3 << 20, requests: 1000, perAddress: 512},
	} {
		cfg := Config{MaxBodyBytesInFlight: c.setBudget, MaxConcurrentRequests: c.setRequests}
		capsFor(&cfg, c.limit)
		if cfg.MaxBodyBytesInFlight != c.budget || cfg.MaxConcurrentRequests != c.requests || cfg.MaxRequestsPerAddress != c.perAddress {
			t.Errorf("capsFor(budget %d, requests %d; limit %d) = budget %d, requests %d, per address %d; want %d, %d, %d",
				c.setBudget, c.setRequests, c.limit, cfg.MaxBodyBytesInFlight, cfg.MaxConcurrentRequests, cfg.MaxRequestsPerAddress,
				c.budget, c.requests, c.perAddress)
		}
	}
}

// TestPerAddressCapUnderMemoryLimit: under a 12 MiB memory limit one
// address holds at most 8 requests (64 in all); another address is still
// served.
func TestPerAddressCapUnderMemoryLimit(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 16), make(chan struct{})
	loopback, _ := ParseTrustedProxies("127.0.0.1, ::1")
	srv := httptest.NewServer(Handler(Config{Store: sqliteStore(t), MCP: blockingServer(started, release),
		MemoryLimit: 12 << 20, TrustedProxies: loopback}))
	t.Cleanup(srv.Close)
	defer close(release)
	for range 8 {
		go func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/mcp", strings.NewReader(blockCall(1)))
			req.Header = fromAddr("203.0.113.7")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		<-started
	}
	resp, body := do(t, http.MethodPost, srv.URL+"/mcp", toolsListBody, fromAddr("203.0.113.7"))
	checkBusy(t, "a ninth request from an address under a 12 MiB memory limit", resp, body)
	if resp, body := do(t, http.MethodPost, srv.URL+"/mcp", toolsListBody, fromAddr("198.51.100.9")); resp.StatusCode != http.StatusOK {
		t.Errorf("a request from another address = %d %s, want 200", resp.StatusCode, body)
	}
}

// fromAddr is an MCP request's header from a client at addr, as a trusted
// proxy on loopback names it.
func fromAddr(addr string) http.Header {
	h := mcpHeader()
	h.Set("X-Forwarded-For", addr)
	return h
}

// TestLargeBodiesLeaveRoomForOrdinaryCalls: bodies over 256 KiB cannot
// take the last 512 KiB of the budget, so while a flood of them fills
// their share, a tools/call of 64 KiB is still served.
func TestLargeBodiesLeaveRoomForOrdinaryCalls(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 16), make(chan struct{})
	srv := httptest.NewServer(Handler(Config{Store: sqliteStore(t), MCP: blockingServer(started, release),
		MaxBodyBytesInFlight: 2 << 20}))
	t.Cleanup(srv.Close)
	const large = 1000 << 10 // two fit in 2 MiB, but not in the 1.5 MiB large bodies may take
	held := postAsync(t.Context(), srv.URL+"/mcp", blockCall(large), false)
	<-started
	admitted := []<-chan int{held}
	for _, chunked := range []bool{false, true} {
		second := postAsync(t.Context(), srv.URL+"/mcp", blockCall(large), chunked)
		select {
		case status := <-second:
			if status != http.StatusServiceUnavailable {
				t.Errorf("a second body of %d bytes (chunked %v) with one held and a budget of 2 MiB = %d, want 503", large, chunked, status)
			}
		case <-started:
			t.Errorf("a second body of %d bytes (chunked %v) with one held and a budget of 2 MiB was served, want 503", large, chunked)
			admitted = append(admitted, second)
		}
	}
	small := postAsync(t.Context(), srv.URL+"/mcp", blockCall(64<<10), false)
	select {
	case <-started:
	case status := <-small:
		t.Fatalf("a 64 KiB tools/call while large bodies fill their share = %d, want it served", status)
	case <-time.After(20 * time.Second):
		t.Fatal("a 64 KiB tools/call while large bodies fill their share was not served within 20 s")
	}
	close(release)
	for _, c := range append(admitted, small) {
		if status := <-c; status != http.StatusOK {
			t.Errorf("a held call = %d, want 200", status)
		}
	}
}

// TestBodyBudgetUnderMemoryLimit: under a 48 MiB memory limit the body
// budget is 3 MiB: two bodies of 1 MiB are held at once, a third is
// turned away (the default 8 MiB would take seven).
func TestBodyBudgetUnderMemoryLimit(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 16), make(chan struct{})
	srv := httptest.NewServer(Handler(Config{Store: sqliteStore(t), MCP: blockingServer(started, release), MemoryLimit: 48 << 20}))
	t.Cleanup(srv.Close)
	const pad = DefaultMaxBodyBytes - 200
	var held []<-chan int
	for range 2 {
		held = append(held, postAsync(t.Context(), srv.URL+"/mcp", blockCall(pad), false))
		<-started
	}
	third := postAsync(t.Context(), srv.URL+"/mcp", blockCall(pad), false)
	select {
	case status := <-third:
		if status != http.StatusServiceUnavailable {
			t.Errorf("a third body of 1 MiB under a 48 MiB memory limit = %d, want 503", status)
		}
	case <-started:
		t.Error("a third body of 1 MiB under a 48 MiB memory limit was served, want 503")
		held = append(held, third)
	}
	close(release)
	for _, c := range held {
		if status := <-c; status != http.StatusOK {
			t.Errorf("a held body = %d, want 200", status)
		}
	}
}

var garbage []byte

// TestMemoryReturnedAfterRequests: under a memory limit, once the runtime
// holds more than half of it, the memory the heap freed is returned to the
// system as requests end, rather than kept until the runtime nears the
// limit. Not parallel: it reads the whole process's memory.
func TestMemoryReturnedAfterRequests(t *testing.T) {
	const limit = 64 << 20
	srv := httptest.NewServer(Handler(Config{Store: sqliteStore(t), MCP: blockingServer(nil, nil), MemoryLimit: limit}))
	t.Cleanup(srv.Close)
	guard := newMemoryGuard(limit)
	garbage = make([]byte, limit)
	for i := range garbage {
		garbage[i] = 1 // resident
	}
	garbage = nil
	if held, _ := guard.usage(); held <= limit/2 {
		t.Fatalf("after 64 MiB of garbage the runtime holds %d bytes: the test needs more than half the limit", held)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, body := do(t, http.MethodPost, srv.URL+"/mcp", toolsListBody, mcpHeader()); resp.StatusCode != http.StatusOK {
			t.Fatalf("tools/list = %d %s, want 200", resp.StatusCode, body)
		}
		held, _ := guard.usage()
		if held < limit/2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 s of requests after 64 MiB of garbage: the runtime still holds %d bytes, want under half the limit of %d", held, limit)
		}
	}
}
