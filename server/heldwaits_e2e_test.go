package server_test

// wait_for_messages calls are served by the HTTP front itself (heldWaits)
// rather than by mcp-go's handler. Clients must not see the difference:
// the same call through both gives the same answer, status and headers.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/metrics"
	"github.com/ctalk/ctalk/internal/relay"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

// seen is what a client sees of one HTTP response: status, the headers a
// client reads, and the decoded body.
type seen struct {
	Status  int
	Headers map[string]string
	Body    any
}

// rpcCall is one raw JSON-RPC POST to /mcp, as a client of protocol generation proto sends it.
type rpcCall struct {
	proto   string // "2026-07-28" (stateless, _meta) or "2025-11-25"
	session string // Mcp-Session-Id, for 2025-11-25 after initialize; "" for none
	token   string
	args    any
	// capabilities, if set, are the clientCapabilities in _meta (2026-07-28).
	capabilities any
	// header, if set, changes the request's headers (a malformed request).
	header func(http.Header)
}

func (c rpcCall) post(t *testing.T, url string) seen {
	t.Helper()
	params := map[string]any{"name": "wait_for_messages", "arguments": c.args}
	if c.proto == statelessProtocol {
		caps := c.capabilities
		if caps == nil {
			caps = map[string]any{}
		}
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    c.proto,
			"io.modelcontextprotocol/clientCapabilities": caps,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "held-waits-test", "version": "0"},
		}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", c.proto)
	if c.proto == statelessProtocol {
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "wait_for_messages")
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.header != nil {
		c.header(req.Header)
	}
	resp, err := waitClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := seen{Status: resp.StatusCode, Headers: map[string]string{}}
	for _, h := range []string{"Content-Type", "Mcp-Session-Id", "Cache-Control", "Connection", "Retry-After", "Allow"} {
		if v := resp.Header.Get(h); v != "" {
			a.Headers[h] = v
		}
	}
	if json.Unmarshal(raw, &a.Body) != nil {
		a.Body = string(raw)
	}
	return a
}

// initialize opens a 2025-11-25 session at url and returns its id.
func initialize(t *testing.T, url string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
			`"capabilities":{},"clientInfo":{"name":"held-waits-test","version":"0"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := waitClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatalf("initialize at %s gave no session id", url)
	}
	return id
}

// TestHeldWaitsAnswerAsMCPGo runs each wait through the HTTP front's own
// path and through mcp-go's handler, over one store and one set of rules,
// and compares what the client gets: results that come at once, after a
// wake-up and after a timeout; a tool error (a bad token); bad arguments;
// and malformed requests, which go on to mcp-go. On both protocol
// generations the clients use (2026-07-28 stateless; 2025-11-25 with and
// without a session), on both backends.
func TestHeldWaitsAnswerAsMCPGo(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, store db.Store) {
		m := metrics.New("held-waits")
		rules := relay.New(store, relay.Options{Metrics: m})
		cfg := server.Config{Store: store, Relay: rules, Metrics: m, MetricsToken: metricsToken,
			MCP: mcp.NewServer(nil, mcp.Options{Relay: rules, Metrics: m}), MaxRequestsPerAddress: 64}
		held := httptest.NewServer(server.Handler(cfg))
		t.Cleanup(held.Close)
		viaMCPGo := httptest.NewServer(server.HandlerThroughMCPGo(cfg))
		t.Cleanup(viaMCPGo.Close)
		heldURL, mcpgoURL := held.URL+"/mcp", viaMCPGo.URL+"/mcp"
		tok := seedUsers(t, store, "acme", "umar", "john", "mia")

		calls := 0 // wait_for_messages calls answered by a tool result
		same := func(t *testing.T, what string, a, b seen) {
			t.Helper()
			if diff := cmp.Diff(b, a); diff != "" {
				t.Errorf("%s: held path differs from mcp-go's (-mcp-go +held):\n%s", what, diff)
			}
		}
		waitsOpen := func(want float64) {
			t.Helper()
			deadline := time.Now().Add(10 * time.Second)
			for scrape(t, held.URL+"/metrics", authBearer(metricsToken))["ctalk_waits_open"] != want {
				if time.Now().After(deadline) {
					t.Fatalf("ctalk_waits_open never reached %v", want)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		for _, proto := range []struct{ name, version string }{
			{"stateless", statelessProtocol}, {"session", "2025-11-25"}, {"no session", "2025-11-25"},
		} {
			t.Run(proto.name, func(t *testing.T) {
				base := rpcCall{proto: proto.version}
				sessionAt := func(url string) rpcCall {
					c := base
					if proto.name == "session" {
						c.session = initialize(t, url)
					}
					return c
				}
				onHeld, onMCPGo := sessionAt(heldURL), sessionAt(mcpgoURL)
				both := func(what string, change func(*rpcCall)) (seen, seen) {
					t.Helper()
					h, g := onHeld, onMCPGo
					change(&h)
					change(&g)
					ah, ag := h.post(t, heldURL), g.post(t, mcpgoURL)
					same(t, what, ah, ag)
					return ah, ag
				}

				askVia(t, heldURL, tok["umar"], "john", "What is the retry logic? ("+proto.name+")")
				// At once: john's question is there.
				a, _ := both("a result at once", func(c *rpcCall) { c.token, c.args = tok["john"], map[string]any{"timeout_seconds": 0} })
				calls += 2
				cursor := structured(t, a)["cursor"].(string)

				// After a wake-up: both wait, blocked, until a question comes.
				var wg sync.WaitGroup
				var woken [2]seen
				for i, url := range []string{heldURL, mcpgoURL} {
					c := []rpcCall{onHeld, onMCPGo}[i]
					c.token, c.args = tok["john"], map[string]any{"cursor": cursor, "timeout_seconds": 30}
					wg.Add(1)
					go func() { defer wg.Done(); woken[i] = c.post(t, url) }()
				}
				waitsOpen(2)
				askVia(t, heldURL, tok["mia"], "john", "And the backoff? ("+proto.name+")")
				wg.Wait()
				same(t, "a result after a wake-up", woken[0], woken[1])
				if ev := structured(t, woken[0])["events"].([]any); len(ev) != 1 {
					t.Errorf("woken wait returned %d events, want the new question", len(ev))
				}
				calls += 2

				// After a timeout: nothing new within a second.
				cursor = structured(t, woken[0])["cursor"].(string)
				a, _ = both("a timed-out result", func(c *rpcCall) {
					c.token, c.args = tok["john"], map[string]any{"cursor": cursor, "timeout_seconds": 1}
				})
				if structured(t, a)["timed_out"] != true {
					t.Errorf("wait of 1 s with nothing new = %v, want timed_out", a.Body)
				}
				calls += 2

				// A tool error: a token nobody holds.
				a, _ = both("a bad token", func(c *rpcCall) { c.token, c.args = "ctalk_not-a-token", map[string]any{"timeout_seconds": 5} })
				if !isToolError(a) {
					t.Errorf("a bad token = %v, want a tool error", a.Body)
				}
				calls += 2
				// Bad arguments.
				a, _ = both("a bad timeout", func(c *rpcCall) { c.token, c.args = tok["john"], map[string]any{"timeout_seconds": "soon"} })
				if !isToolError(a) {
					t.Errorf("timeout_seconds \"soon\" = %v, want a tool error", a.Body)
				}
				calls += 2
				both("a bad cursor", func(c *rpcCall) {
					c.token, c.args = tok["john"], map[string]any{"cursor": "yesterday", "timeout_seconds": 5}
				})
				calls += 2
				both("arguments that are not an object", func(c *rpcCall) { c.token, c.args = tok["john"], "everything" })
				// A JSON-RPC error from mcp-go's HandleMessage (on 2026-07-28, with its HTTP status).
				a, _ = both("client capabilities that are not an object", func(c *rpcCall) {
					c.token, c.args, c.capabilities = tok["john"], map[string]any{"timeout_seconds": 0}, "all of them"
				})
				if body, _ := a.Body.(map[string]any); proto.version == statelessProtocol && (body["error"] == nil || a.Status != http.StatusBadRequest) {
					t.Errorf("capabilities \"all of them\" = %d %v, want 400 and a JSON-RPC error", a.Status, a.Body)
				}
				// Malformed requests.
				both("no protocol version header", func(c *rpcCall) {
					c.token, c.args = tok["john"], map[string]any{"timeout_seconds": 0}
					c.header = func(h http.Header) { h.Del("Mcp-Protocol-Version") }
				})
				both("a Mcp-Name of another tool", func(c *rpcCall) {
					c.token, c.args = tok["john"], map[string]any{"timeout_seconds": 0}
					c.header = func(h http.Header) { h.Set("Mcp-Name", "check_inbox") }
				})
				both("a protocol version nobody speaks", func(c *rpcCall) {
					c.token, c.args = tok["john"], map[string]any{"timeout_seconds": 0}
					c.header = func(h http.Header) { h.Set("Mcp-Protocol-Version", "1999-01-01") }
				})
				both("text/plain", func(c *rpcCall) {
					c.token, c.args = tok["john"], map[string]any{"timeout_seconds": 0}
					c.header = func(h http.Header) { h.Set("Content-Type", "text/plain") }
				})
			})
		}
		// Each call is counted once, held or not, and no wait is left open.
		got := scrape(t, held.URL+"/metrics", authBearer(metricsToken))
		if n := got[`ctalk_tool_calls_total{outcome="ok",tool="wait_for_messages"}`] +
			got[`ctalk_tool_calls_total{outcome="user_error",tool="wait_for_messages"}`] +
			got[`ctalk_tool_calls_total{outcome="unauthenticated",tool="wait_for_messages"}`]; int(n) < calls {
			t.Errorf("wait_for_messages calls counted: %v, want at least %d (%v)", n, calls, got)
		}
		waitsOpen(0)
	})
}

// structured is a tool result's structuredContent.
func structured(t *testing.T, a seen) map[string]any {
	t.Helper()
	body, _ := a.Body.(map[string]any)
	res, _ := body["result"].(map[string]any)
	sc, ok := res["structuredContent"].(map[string]any)
	if !ok {
		t.Fatalf("no structured result in %v", a.Body)
	}
	return sc
}

func isToolError(a seen) bool {
	body, _ := a.Body.(map[string]any)
	res, _ := body["result"].(map[string]any)
	return res["isError"] == true
}

// TestHeldWaitsAtOAuthMCP: at /oauth/mcp a wait is served by the held path
// as at /mcp, with the resource the bearer guard checked, without which
// the access token would not authenticate: it returns the question to its
// user (at once, or woken by it). A login token is stopped by the guard.
func TestHeldWaitsAtOAuthMCP(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg))
		loginToken := e.team(t, "acme") // umar's; john is on the team too
		access := e.connect(t, e.register(t, oauthRedirect), oauthRedirect).Access
		url := e.base + "/oauth/mcp"

		waited := make(chan seen, 1)
		go func() {
			waited <- rpcCall{proto: statelessProtocol, token: access,
				args: map[string]any{"cursor": "", "timeout_seconds": 30}}.post(t, url)
		}()
		cs := connectTo(t, e.base+"/mcp", "", "")
		john := login(t, cs, "acme", "john")
		ask(t, cs, john, "umar", "Through OAuth?")
		select {
		case a := <-waited:
			ev, _ := structured(t, a)["events"].([]any)
			if a.Status != http.StatusOK || len(ev) != 1 || !strings.Contains(fmt.Sprint(ev[0]), "Through OAuth?") {
				t.Errorf("wait at /oauth/mcp with an access token = %d %v, want john's question", a.Status, a.Body)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the wait at /oauth/mcp was not woken by a question")
		}

		// A login token passes the guard only if it is an access token: it is not.
		if a := (rpcCall{proto: statelessProtocol, token: loginToken, args: map[string]any{"timeout_seconds": 0}}).post(t, url); a.Status != http.StatusUnauthorized {
			t.Errorf("wait at /oauth/mcp with a login token = %d %v, want 401 from the guard", a.Status, a.Body)
		}
	})
}
