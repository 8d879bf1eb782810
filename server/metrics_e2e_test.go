package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/metrics"
	"github.com/ctalk/ctalk/internal/relay"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

// metricsToken is the CTALK_METRICS_TOKEN of these tests.
const metricsToken = "metrics-token-0123456789abcdef"

// observed is one running ctalk with metrics and a JSON log.
type observed struct {
	url   string // the server's root
	m     *metrics.Metrics
	rules *relay.Service
	logs  *testkit.SyncBuffer
}

// serveObserved serves ctalk over store as `ctalk serve` wires it: one
// Metrics shared by the rules, the tools and the HTTP front, the JSON log,
// /metrics behind metricsToken, clients behind a trusted loopback proxy,
// and cfg's other settings.
func serveObserved(t *testing.T, store db.Store, cfg server.Config) *observed {
	t.Helper()
	o := &observed{m: metrics.New("e2e-metrics"), logs: &testkit.SyncBuffer{}}
	logger := server.NewLogger(o.logs, "json")
	o.rules = relay.New(store, relay.Options{Metrics: o.m, HashConcurrency: 4})
	loopback, err := server.ParseTrustedProxies("127.0.0.1, ::1")
	if err != nil {
		t.Fatalf("ParseTrustedProxies: %v", err)
	}
	cfg.Store, cfg.Relay, cfg.Logger, cfg.Version, cfg.TrustedProxies, cfg.Metrics = store, o.rules, logger, "e2e", loopback, o.m
	cfg.MCP = mcp.NewServer(nil, mcp.Options{Version: "e2e", Logger: logger, Relay: o.rules, Metrics: o.m})
	ts := httptest.NewServer(server.Handler(cfg))
	t.Cleanup(ts.Close)
	o.url = ts.URL
	return o
}

// get sends a GET with hdr and returns the response with its body read.
func get(t *testing.T, url string, hdr http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatalf("NewRequest: %v", err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func authBearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

// scrape reads url (a /metrics endpoint) into series → value, each series
// written as the exposition format writes it: name{label="value",...},
// labels in name order.
func scrape(t *testing.T, url string, hdr http.Header) map[string]float64 {
	t.Helper()
	resp, body := get(t, url, hdr)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d %s, want 200", url, resp.StatusCode, body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			t.Fatalf("metrics line %q: not `series value`", line)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsCountToolCalls: after real tool calls through the HTTP server,
// /metrics shows each series the operator docs name, with the counts of
// the calls made; the labels name no organization, user or text.
func TestMetricsCountToolCalls(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, store db.Store) {
		// One request per client address at once: a second one from the
		// address of an open wait is refused (503), which the metrics count.
		o := serveObserved(t, store, server.Config{MetricsToken: metricsToken, MaxRequestsPerAddress: 1})
		mcpURL, metricsURL := o.url+"/mcp", o.url+"/metrics"
		cs := connectTo(t, mcpURL, "", "")
		umar, john := team(t, cs, "acme")
		const asks = 3
		for i := range asks {
			ask(t, cs, umar, "john", fmt.Sprintf("%s #%d", seedQuestion, i))
		}
		callErr(t, cs, "ask_person", args{"auth_token": umar, "to_user_id": "nobody", "question": seedQuestion})
		const wrong = 5 // the account's free failures: the last one locks it
		for range wrong {
			callErr(t, cs, "login", args{"org_id": "acme", "user_id": "umar", "password": "not-umars-password"})
		}

		// John waits from an address of his own; a question wakes him.
		const johnAddr = "198.51.100.20"
		waiter := openSession(t, mcpURL, "", forwardedFor(johnAddr), nil)
		woke := make(chan string, 1)
		go func() {
			res := tryCall(context.Background(), waiter, "wait_for_messages", args{"auth_token": john, "cursor": "latest", "timeout_seconds": 30})
			woke <- resultText(res)
		}()
		deadline := time.Now().Add(10 * time.Second)
		for scrape(t, metricsURL, authBearer(metricsToken))["ctalk_waits_open"] != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("ctalk_waits_open never became 1 while john waited")
			}
			time.Sleep(10 * time.Millisecond)
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, mcpURL, strings.NewReader(`{}`))
		req.Header = forwardedFor(johnAddr)
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("POST /mcp from the waiting address = %v %v, want 503 (one request per address)", resp, err)
		}
		ask(t, cs, umar, "john", seedQuestion)
		select {
		case text := <-woke:
			if !strings.Contains(text, seedQuestion) {
				t.Fatalf("wait_for_messages = %.200s, want the question", text)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("wait_for_messages was not woken by the question")
		}

		got := scrape(t, metricsURL, authBearer(metricsToken))
		hashes := float64(o.rules.PasswordHashes())
		want := map[string]float64{
			`ctalk_tool_calls_total{outcome="ok",tool="ask_person"}`:             asks + 1,
			`ctalk_tool_calls_total{outcome="user_error",tool="ask_person"}`:     1,
			`ctalk_tool_calls_total{outcome="internal_error",tool="ask_person"}`: 0,
			`ctalk_tool_call_duration_seconds_count{tool="ask_person"}`:          asks + 2,
			`ctalk_tool_calls_total{outcome="ok",tool="register_organization"}`:  1,
			`ctalk_tool_calls_total{outcome="ok",tool="register_user"}`:          2,
			`ctalk_tool_calls_total{outcome="ok",tool="login"}`:                  2,
			`ctalk_tool_calls_total{outcome="user_error",tool="login"}`:          wrong,
			`ctalk_tool_calls_total{outcome="ok",tool="wait_for_messages"}`:      1,
			`ctalk_tool_calls_total{outcome="ok",tool="check_inbox"}`:            0, // declared before any call
			`ctalk_waits_open`:                                                              0,
			`ctalk_wait_wakeup_seconds_count`:                                               1,
			`ctalk_wait_delivery_seconds_count`:                                             1,
			`ctalk_throttle_locks_total{kind="account"}`:                                    1,
			`ctalk_throttle_locks_total{kind="address"}`:                                    0,
			`ctalk_throttle_locks_total{kind="admin_password"}`:                             0,
			`ctalk_http_refused_total{reason="address"}`:                                    1,
			`ctalk_http_refused_total{reason="requests"}`:                                   0,
			`ctalk_http_refused_total{reason="body_bytes"}`:                                 0,
			`ctalk_password_hashes_total`:                                                   hashes,
			`ctalk_password_hash_wait_seconds_count`:                                        hashes,
			`ctalk_password_hash_queue_depth`:                                               0,
			`ctalk_build_info{goversion="` + runtime.Version() + `",version="e2e-metrics"}`: 1,
		}
		for series, v := range want {
			if g, ok := got[series]; !ok || g != v {
				t.Errorf("%s = %v (present %v), want %v", series, g, ok, v)
			}
		}
		// 2 admin checks and 2 new hashes to register users, 1 hash to
		// register the organization, 7 logins.
		if hashes < 12 {
			t.Errorf("PasswordHashes() = %v, want at least 12", hashes)
		}
		if got[`ctalk_db_connections_open`] < 1 {
			t.Errorf("ctalk_db_connections_open = %v, want at least 1 (the store is open)", got[`ctalk_db_connections_open`])
		}
		for _, series := range []string{`ctalk_db_connections_in_use`, `go_goroutines`, `process_cpu_seconds_total`,
			`ctalk_tool_call_duration_seconds_bucket{tool="ask_person",le="+Inf"}`, `ctalk_wait_wakeup_seconds_sum`} {
			if _, ok := got[series]; !ok {
				t.Errorf("/metrics has no %s", series)
			}
		}
		for series := range got {
			for _, private := range []string{"acme", "umar", "john", umar, john, seedQuestion, johnAddr} {
				if strings.Contains(series, private) {
					t.Errorf("series %s names %q: labels must be bounded sets, never ids or text", series, private)
				}
			}
		}
	})
}

// TestMetricsEndpointAuth: /metrics on the main listener needs the token
// (401 without it or with another), and is not there at all (404) when no
// token is configured; the listener of its own needs none, and serves
// nothing else.
func TestMetricsEndpointAuth(t *testing.T) {
	t.Parallel()
	store := dbtest.Open(t, dbtest.NewConfig(t, "sqlite"))
	o := serveObserved(t, store, server.Config{MetricsToken: metricsToken})
	for _, tc := range []struct {
		name string
		hdr  http.Header
		want int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"wrong token", authBearer(metricsToken + "x"), http.StatusUnauthorized},
		{"not bearer", http.Header{"Authorization": {"Basic " + metricsToken}}, http.StatusUnauthorized},
		{"token", authBearer(metricsToken), http.StatusOK},
	} {
		resp, body := get(t, o.url+"/metrics", tc.hdr)
		if resp.StatusCode != tc.want {
			t.Errorf("GET /metrics (%s) = %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
		if tc.want == http.StatusOK && !strings.Contains(body, "ctalk_build_info") {
			t.Errorf("GET /metrics (%s): no ctalk_build_info in %.200s", tc.name, body)
		} else if tc.want != http.StatusOK && strings.Contains(body, "ctalk_") {
			t.Errorf("GET /metrics (%s) = %.200s, want no series", tc.name, body)
		}
	}

	closed := serveObserved(t, store, server.Config{})
	if resp, _ := get(t, closed.url+"/metrics", authBearer(metricsToken)); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /metrics without CTALK_METRICS_TOKEN = %d, want 404", resp.StatusCode)
	}

	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	addr, err := server.ServeMetrics(ctx, "127.0.0.1:0", closed.m, server.NewLogger(io.Discard, "text"))
	if err != nil {
		t.Fatalf("ServeMetrics: %v", err)
	}
	own := "http://" + addr.String()
	if got := scrape(t, own+"/metrics", nil); got[`ctalk_waits_open`] != 0 || len(got) < 20 {
		t.Errorf("own listener's /metrics has %d series, ctalk_waits_open %v; want the full set", len(got), got[`ctalk_waits_open`])
	}
	for _, path := range []string{"/", "/health", "/mcp"} {
		if resp, _ := get(t, own+path, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s on the metrics listener = %d, want 404", path, resp.StatusCode)
		}
	}
	if _, err := server.ServeMetrics(ctx, addr.String(), closed.m, server.NewLogger(io.Discard, "text")); err == nil ||
		!strings.Contains(err.Error(), "CTALK_METRICS_ADDR") {
		t.Errorf("ServeMetrics on a taken port: %v, want an error naming CTALK_METRICS_ADDR", err)
	}
}

// TestJSONLogs: CTALK_LOG_FORMAT=json writes one JSON object a line; each
// request's line carries the request id its response's X-Request-Id
// header has (a trusted proxy's when sane, else a new one); and no line
// holds a password, a token or message text.
func TestJSONLogs(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		o := serveObserved(t, dbtest.Open(t, cfg), server.Config{MetricsToken: metricsToken})
		cs := connectTo(t, o.url+"/mcp", "", "")
		secrets, texts := walkthrough(t, cs)
		callErr(t, cs, "login", args{"org_id": "ai-company", "user_id": "umar", "password": "wrong-password-123"})
		secrets = append(secrets, "wrong-password-123", metricsToken)
		get(t, o.url+"/metrics", authBearer(metricsToken))

		// From the trusted proxy (loopback), a sane id is kept; a strange one is replaced.
		ids := map[string]bool{}
		for _, in := range []string{"edge-7f3a9c:42", "", "has spaces in it", strings.Repeat("x", 200)} {
			resp, _ := get(t, o.url+"/health", http.Header{"X-Request-Id": {in}})
			id := resp.Header.Get("X-Request-Id")
			if keep := in == "edge-7f3a9c:42"; (id == in) != keep || id == "" || ids[id] {
				t.Errorf("X-Request-Id in %q → response %q, want it kept %v (and ids unique, never empty)", in, id, keep)
			}
			ids[id] = true
		}

		lines := strings.Split(strings.TrimSpace(o.logs.String()), "\n")
		requests := 0
		for _, line := range lines {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Errorf("log line is not JSON (%v): %.200s", err, line)
				continue
			}
			for _, s := range append(secrets, texts...) {
				if strings.Contains(line, s) {
					t.Errorf("log line contains %.12q…: %.200s", s, line)
				}
			}
			if rec["msg"] != "request" {
				continue
			}
			requests++
			id, _ := rec["request_id"].(string)
			if id == "" {
				t.Errorf("request line without request_id: %s", line)
			}
			if rec["path"] == "/health" && !ids[id] {
				t.Errorf("request line's request_id %q is none of the X-Request-Id headers sent back %v", id, ids)
			}
		}
		if requests < 20 {
			t.Errorf("log has %d request lines, want one per request (at least 20):\n%s", requests, o.logs.String())
		}

		// A tool's unexpected failure is logged with the id of the request it failed in.
		broken, err := db.Open(t.Context(), cfg)
		if err != nil {
			t.Fatalf("db.Open: %v", err)
		}
		broken.Close()
		b := serveObserved(t, broken, server.Config{})
		callErr(t, connectTo(t, b.url+"/mcp", "", ""), "ask_person", args{"auth_token": secrets[2], "to_user_id": "john", "question": seedQuestion})
		failed, requestIDs := "", map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(b.logs.String()), "\n") {
			var rec struct {
				Msg       string `json:"msg"`
				Path      string `json:"path"`
				RequestID string `json:"request_id"`
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("log line is not JSON (%v): %.200s", err, line)
			}
			switch {
			case rec.Msg == "request" && rec.Path == "/mcp":
				requestIDs[rec.RequestID] = true
			case strings.Contains(line, `"tool":"ask_person"`):
				failed = rec.RequestID
			}
		}
		if failed == "" || !requestIDs[failed] {
			t.Errorf("ask_person's failure line has request_id %q, want one of the /mcp request lines' %v:\n%s", failed, requestIDs, b.logs.String())
		}
	})
}

// TestRequestIDFromStrangers: an X-Request-Id from a client that is not a
// trusted proxy is not believed (it could forge another request's id in
// the log): the server makes its own.
func TestRequestIDFromStrangers(t *testing.T) {
	t.Parallel()
	var logs testkit.SyncBuffer
	store := dbtest.Open(t, dbtest.NewConfig(t, "sqlite"))
	ts := httptest.NewServer(server.Handler(server.Config{Store: store, MCP: mcp.NewServer(store, mcp.Options{}),
		Logger: server.NewLogger(&logs, "json")}))
	t.Cleanup(ts.Close)
	resp, _ := get(t, ts.URL+"/health", http.Header{"X-Request-Id": {"forged-id"}})
	id := resp.Header.Get("X-Request-Id")
	if id == "" || id == "forged-id" {
		t.Errorf("X-Request-Id from an untrusted client → %q, want a new id", id)
	}
	if !strings.Contains(logs.String(), `"request_id":"`+id+`"`) || strings.Contains(logs.String(), "forged-id") {
		t.Errorf("log = %s, want the request line with request_id %q and no forged id", logs.String(), id)
	}
}
