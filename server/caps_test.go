package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// blockingServer is a bare mcp-go server with a tool "block" that holds its
// request until release is closed, saying on started when it begins.
func blockingServer(started chan<- struct{}, release <-chan struct{}) *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("ctalk", testVersion)
	s.AddTool(mcpgo.NewTool("block", mcpgo.WithString("pad")), func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return mcpgo.NewToolResultText("done"), nil
	})
	return s
}

func blockCall(pad int) string {
	return `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"block","arguments":{"pad":"` + strings.Repeat("p", pad) + `"}}}`
}

// post sends body to url in the background and reports the status.
func postAsync(ctx context.Context, url, body string, chunked bool) <-chan int {
	done := make(chan int, 1)
	go func() {
		var r io.Reader = strings.NewReader(body)
		if chunked {
			r = io.MultiReader(r) // no length known up front
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, r)
		req.Header = mcpHeader()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	return done
}

// checkBusy asserts a 503 with Retry-After and a JSON-RPC error saying busy.
func checkBusy(t *testing.T, what string, resp *http.Response, body []byte) {
	t.Helper()
	var res rpcResponse
	json.Unmarshal(body, &res) //nolint:errcheck // checked below
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" ||
		res.Error == nil || !strings.Contains(res.Error.Message, "server is busy") {
		t.Errorf("%s = %d Retry-After %q %s, want 503, Retry-After: 1 and a JSON-RPC error saying the server is busy",
			what, resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

func TestConcurrentRequestsCap(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}, 16), make(chan struct{})
	srv := httptest.NewServer(Handler(Config{Store: sqliteStore(t), MCP: blockingServer(started, release), MaxConcurrentRequests: 2}))
	t.Cleanup(srv.Close)
	held := []<-chan int{postAsync(t.Context(), srv.URL+"/mcp", blockCall(1), false), postAsync(t.Context(), srv.URL+"/mcp", blockCall(1), false)}
	<-started
	<-started
	resp, body := do(t, http.MethodPost, srv.URL+"/mcp", toolsListBody, mcpHeader())
	checkBusy(t, "a third request while two are held", resp, body)
	close(release)
	for _, c := range held {
		if status := <-c; status != http.StatusOK {
			t.Errorf("held request = %d, want 200", status)
		}
	}
	if resp, body := do(t, http.MethodPost, srv.URL+"/mcp", toolsListBody, mcpHeader()); resp.StatusCode != http.StatusOK {
		t.Errorf("request after the held ones ended = %d %s, want 200", resp.StatusCode, body)
	}
}

func TestBodyBytesInFlightCap(t *testing.T) {
	t.Parallel()
	const maxBody, budget = 64 << 10, 100 << 10
	started, release := make(chan struct{}, 16), make(chan struct{})
	srv := httptest.NewServer(Handler(Config{Store: sqliteStore(t), MCP: blockingServer(started, release),
		MaxBodyBytes: maxBody, MaxBodyBytesInFlight: budget}))
	t.Cleanup(srv.Close)
	held := postAsync(t.Context(), srv.URL+"/mcp", blockCall(60<<10), false)
	<-started // 60 KiB of the 100 KiB budget are held
	for _, chunked := range []bool{false, true} {
		status := <-postAsync(t.Context(), srv.URL+"/mcp", blockCall(50<<10), chunked)
		if status != http.StatusServiceUnavailable {
			t.Errorf("a 50 KiB body (chunked %v) while 60 KiB of a 100 KiB budget are held = %d, want 503", chunked, status)
		}
	}
	resp, body := do(t, http.MethodPost, srv.URL+"/mcp", blockCall(50<<10), mcpHeader())
	checkBusy(t, "a 50 KiB body over the budget", resp, body)
	if resp, body := do(t, http.MethodPost, srv.URL+"/mcp", toolsListBody, mcpHeader()); resp.StatusCode != http.StatusOK {
		t.Errorf("a small request within the budget = %d %s, want 200", resp.StatusCode, body)
	}
	close(release)
	if status := <-held; status != http.StatusOK {
		t.Errorf("held request = %d, want 200", status)
	}
	for _, chunked := range []bool{false, true} {
		if status := <-postAsync(t.Context(), srv.URL+"/mcp", blockCall(50<<10), chunked); status != http.StatusOK {
			t.Errorf("a 50 KiB body (chunked %v) once the budget is free = %d, want 200", chunked, status)
		}
	}
}

// TestWaitsCountAgainstConcurrencyCap: open waits hold their request
// slot; when they end the slots are free again. On both backends.
func TestWaitsCountAgainstConcurrencyCap(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		srv := startServer(t, s, Config{MaxConcurrentRequests: 2})
		token := registerAndLogin(t, srv.URL)
		ctx, cancel := context.WithCancel(t.Context())
		wait, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": map[string]any{
			"name": "wait_for_messages", "arguments": map[string]any{"auth_token": token, "timeout_seconds": 50}}})
		ended := make(chan string, 2) // how a wait ended: its status and body
		for range 2 {
			go func() {
				for {
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/mcp", bytes.NewReader(wait))
					req.Header = mcpHeader()
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						ended <- err.Error()
						return
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					// The probe below holds a slot for a moment too, so a wait
					// arriving then is itself turned away by the cap: try again.
					if resp.StatusCode == http.StatusServiceUnavailable && ctx.Err() == nil {
						time.Sleep(5 * time.Millisecond)
						continue
					}
					ended <- fmt.Sprintf("HTTP %d %s", resp.StatusCode, body)
					return
				}
			}()
		}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			resp, body := do(t, http.MethodPost, srv.URL+"/mcp", toolsListBody, mcpHeader())
			if resp.StatusCode == http.StatusServiceUnavailable {
				checkBusy(t, "tools/list with two waits open and a cap of 2", resp, body)
				break
			}
			select {
			case how := <-ended: // its slot is free: the cap cannot be full
				t.Fatalf("a wait_for_messages of 50 s ended before it was cancelled: %s", how)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("tools/list with two waits open and a cap of 2 = %d %s, want 503 within 20 s", resp.StatusCode, body)
			}
		}
		cancel()
		for range 2 {
			<-ended
		}
		untilStatus(t, srv.URL, http.StatusOK, "after the waits ended")
	})
}

// untilStatus polls tools/list until it answers want, for up to 20 s.
func untilStatus(t *testing.T, srvURL string, want int, when string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, body := do(t, http.MethodPost, srvURL+"/mcp", toolsListBody, mcpHeader())
		if resp.StatusCode == want {
			if want == http.StatusServiceUnavailable {
				checkBusy(t, "tools/list "+when, resp, body)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools/list %s = %d %s, want %d within 20 s", when, resp.StatusCode, body, want)
		}
	}
}

// registerAndLogin creates an organization with one user and returns its token.
func registerAndLogin(t *testing.T, srvURL string) string {
	t.Helper()
	const admin, pw = "caps-admin-password", "caps-user-password"
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"register_organization", map[string]any{"org_id": "caps", "name": "Caps", "admin_password": admin}},
		{"register_user", map[string]any{"org_id": "caps", "admin_password": admin, "user_id": "umar", "name": "Umar", "password": pw}},
	} {
		if text, isErr := toolCall(t, srvURL, mcpHeader(), c.tool, c.args); isErr {
			t.Fatalf("%s: %s", c.tool, text)
		}
	}
	text, isErr := toolCall(t, srvURL, mcpHeader(), "login", map[string]any{"org_id": "caps", "user_id": "umar", "password": pw})
	var out struct {
		AuthToken string `json:"auth_token"`
	}
	if isErr || json.Unmarshal([]byte(text), &out) != nil || out.AuthToken == "" {
		t.Fatalf("login = %s, want a token", text)
	}
	return out.AuthToken
}

// TestRequestsPerAddressCap: one address cannot hold more than its share
// of the request slots; another address is still served meanwhile.
func TestRequestsPerAddressCap(t *testing.T) {
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
	for range 2 {
		go func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/mcp", strings.NewReader(blockCall(1)))
			req.Header = from("203.0.113.7")
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
	resp, body := do(t, http.MethodPost, srv.URL+"/mcp", toolsListBody, from("203.0.113.7"))
	checkBusy(t, "a third request from an address holding two", resp, body)
	if !strings.Contains(string(body), "from your address") {
		t.Errorf("refusal %s does not say it is about the address", body)
	}
	// Another address is served meanwhile.
	if resp, body := do(t, http.MethodPost, srv.URL+"/mcp", toolsListBody, from("198.51.100.9")); resp.StatusCode != http.StatusOK {
		t.Errorf("a request from another address = %d %s, want 200", resp.StatusCode, body)
	}
	close(release)
	for range 2 {
		if status := <-held; status != http.StatusOK {
			t.Errorf("held request = %d, want 200", status)
		}
	}
	if resp, body := do(t, http.MethodPost, srv.URL+"/mcp", toolsListBody, from("203.0.113.7")); resp.StatusCode != http.StatusOK {
		t.Errorf("a request from the address once its requests ended = %d %s, want 200", resp.StatusCode, body)
	}
}
