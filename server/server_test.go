package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mcp"
)

const (
	testVersion    = "v9.9.9-test"
	initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"server_test","version":"0"}}}`
	toolsListBody = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
)

// newHandler is the real handler with the real tools over store; cfg.Logger
// receives both the request log and the tools' log.
func newHandler(store db.Store, cfg Config) http.Handler {
	cfg.Store, cfg.Version = store, testVersion
	cfg.MCP = mcp.NewServer(store, mcp.Options{Version: testVersion, Logger: cfg.Logger})
	return Handler(cfg)
}

func startServer(t *testing.T, store db.Store, cfg Config) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(newHandler(store, cfg))
	t.Cleanup(srv.Close)
	return srv
}

func sqliteStore(t *testing.T) db.Store {
	t.Helper()
	return dbtest.Open(t, dbtest.NewConfig(t, "sqlite"))
}

// do sends one request and returns the response with its body read.
func do(t *testing.T, method, url, body string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatalf("NewRequest: %v", err)
	}
	if header != nil {
		req.Header = header.Clone()
		if h := header.Get("Host"); h != "" {
			req.Host = h
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return resp, b
}

// mcpHeader is what a Streamable HTTP client sends with every POST, plus
// extra name, value pairs.
func mcpHeader(extra ...string) http.Header {
	h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {"2025-06-18"}}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return h
}

type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// decodeRPC reads a JSON-RPC response sent as JSON or as an SSE event.
func decodeRPC(t *testing.T, contentType string, body []byte) rpcResponse {
	t.Helper()
	data := body
	if strings.HasPrefix(contentType, "text/event-stream") {
		data = nil
		for sc := bufio.NewScanner(bytes.NewReader(body)); sc.Scan(); {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				data = append(data, d...)
			}
		}
	}
	var r rpcResponse
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("response is not JSON-RPC: %v\n%s", err, body)
	}
	return r
}

func postMCP(t *testing.T, srvURL, body string, header http.Header) (int, rpcResponse) {
	t.Helper()
	resp, b := do(t, http.MethodPost, srvURL+"/mcp", body, header)
	return resp.StatusCode, decodeRPC(t, resp.Header.Get("Content-Type"), b)
}

// initSession initializes like a real client and returns the headers its
// later requests carry, with the session id the server minted.
func initSession(t *testing.T, srvURL string) http.Header {
	t.Helper()
	resp, b := do(t, http.MethodPost, srvURL+"/mcp", initializeBody, mcpHeader())
	if res := decodeRPC(t, resp.Header.Get("Content-Type"), b); resp.StatusCode != http.StatusOK || res.Error != nil {
		t.Fatalf("initialize = %d %s, want 200 with a result", resp.StatusCode, b)
	}
	h := mcpHeader("Mcp-Session-Id", resp.Header.Get("Mcp-Session-Id"))
	resp, b = do(t, http.MethodPost, srvURL+"/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized = %d %s, want 202", resp.StatusCode, b)
	}
	return h
}

func getJSON(t *testing.T, url string, header http.Header) (int, map[string]string) {
	t.Helper()
	resp, b := do(t, http.MethodGet, url, "", header)
	var m map[string]string
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || json.Unmarshal(b, &m) != nil {
		t.Fatalf("GET %s = %s %s, want a JSON object of strings", url, ct, b)
	}
	return resp.StatusCode, m
}

func TestHealth(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		status, got := getJSON(t, startServer(t, s, Config{}).URL+"/health", nil)
		if diff := cmp.Diff(map[string]string{"status": "ok"}, got); status != http.StatusOK || diff != "" {
			t.Errorf("GET /health = %d, want 200; body (-want +got):\n%s", status, diff)
		}
	})
}

// checkUnavailable asserts /health reports the database down, with a reason.
func checkUnavailable(t *testing.T, healthURL string) {
	t.Helper()
	status, got := getJSON(t, healthURL, nil)
	if status != http.StatusServiceUnavailable || got["status"] != "unavailable" || !strings.Contains(got["reason"], "database") {
		t.Errorf("GET /health with the database down = %d %v, want 503, status unavailable and a reason naming the database", status, got)
	}
}

func TestHealthSQLiteClosed(t *testing.T) {
	t.Parallel()
	s, err := db.Open(t.Context(), dbtest.NewConfig(t, "sqlite"))
	if err != nil {
		t.Fatalf("db.Open: %v", err)
	}
	srv := startServer(t, s, Config{})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	checkUnavailable(t, srv.URL+"/health")
}

// TestHealthPostgresRecovers cuts the database off behind a TCP proxy, then
// restores it: /health must follow without restarting the server.
func TestHealthPostgresRecovers(t *testing.T) {
	t.Parallel()
	base, err := url.Parse(dbtest.PostgresURL(t))
	if err != nil || base.Host == "" {
		t.Skipf("%s is not a postgres:// URL with a host, which the proxy needs", dbtest.PostgresURLEnv)
	}
	target := base.Host
	if base.Port() == "" {
		target = net.JoinHostPort(base.Hostname(), "5432")
	}
	proxy := testkit.NewTCPProxy(t, target)
	schemaURL, _ := dbtest.NewPostgresSchema(t)
	u, _ := url.Parse(schemaURL)
	u.Host = proxy.Addr()
	srv := startServer(t, dbtest.Open(t, db.Config{DatabaseURL: u.String()}), Config{})

	if status, got := getJSON(t, srv.URL+"/health", nil); status != http.StatusOK {
		t.Fatalf("GET /health through the proxy = %d %v, want 200", status, got)
	}
	proxy.Down()
	checkUnavailable(t, srv.URL+"/health")

	proxy.Up(t) // same port
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		status, got := getJSON(t, srv.URL+"/health", nil)
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /health after the database came back = %d %v, want 200 within 15s", status, got)
		}
	}
}

func TestIndex(t *testing.T) {
	t.Parallel()
	srv := startServer(t, sqliteStore(t), Config{})
	host := strings.TrimPrefix(srv.URL, "http://")
	for scheme, header := range map[string]http.Header{"http": nil, "https": {"X-Forwarded-Proto": {"https"}}} {
		status, got := getJSON(t, srv.URL+"/", header)
		endpoint := scheme + "://" + host + "/mcp"
		want := map[string]string{"service": "ctalk", "version": testVersion, "mcp_endpoint": endpoint}
		some := map[string]string{"service": got["service"], "version": got["version"], "mcp_endpoint": got["mcp_endpoint"]}
		if diff := cmp.Diff(want, some); status != http.StatusOK || diff != "" {
			t.Errorf("GET / with %v = %d, want 200; body (-want +got):\n%s", header, status, diff)
		}
		if add := got["claude_mcp_add"]; !strings.HasPrefix(add, "claude mcp add") || !strings.Contains(add, " "+endpoint+" ") {
			t.Errorf("GET / with %v: claude_mcp_add = %q, want a `claude mcp add` line with %s", header, add, endpoint)
		}
	}
}

// toolNames lists the tools srvURL offers in the session of header.
func toolNames(t *testing.T, srvURL string, header http.Header) map[string]bool {
	t.Helper()
	status, res := postMCP(t, srvURL, toolsListBody, header)
	var list struct{ Tools []struct{ Name string } }
	if status != http.StatusOK || res.Error != nil || json.Unmarshal(res.Result, &list) != nil {
		t.Fatalf("tools/list = %d %+v, want 200 with a result", status, res)
	}
	names := map[string]bool{}
	for _, tool := range list.Tools {
		names[tool.Name] = true
	}
	return names
}

func TestMCPWithoutToken(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		srv := startServer(t, s, Config{})
		status, res := postMCP(t, srv.URL, initializeBody, mcpHeader())
		var init struct {
			ServerInfo struct{ Name, Version string }
		}
		if status != http.StatusOK || res.Error != nil || json.Unmarshal(res.Result, &init) != nil {
			t.Fatalf("initialize = %d %+v, want 200 with a result", status, res)
		}
		if init.ServerInfo.Name != "ctalk" || init.ServerInfo.Version != testVersion {
			t.Errorf("initialize serverInfo = %+v, want ctalk %s", init.ServerInfo, testVersion)
		}
		names := toolNames(t, srv.URL, initSession(t, srv.URL))
		for _, want := range []string{"register_organization", "register_user", "login", "whoami", "list_users",
			"get_user_profile", "update_my_notes", "update_user_profile_notes", "ask_person", "check_inbox",
			"propose_response", "send_response", "check_replies"} {
			if !names[want] {
				t.Errorf("tools/list lacks the seed's tool %s; got %v", want, names)
			}
		}
	})
}

// TestMCPAnyReplica: no sticky sessions; a session begun on one replica
// carries on at another sharing the database.
func TestMCPAnyReplica(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		a, b := startServer(t, s, Config{}), startServer(t, s, Config{})
		if names := toolNames(t, b.URL, initSession(t, a.URL)); !names["login"] {
			t.Errorf("tools/list at replica B in a session from replica A = %v, want the tools", names)
		}
	})
}

func TestMCPGetIsNotAllowed(t *testing.T) {
	t.Parallel()
	srv := startServer(t, sqliteStore(t), Config{})
	if resp, _ := do(t, http.MethodGet, srv.URL+"/mcp", "", http.Header{"Accept": {"text/event-stream"}}); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /mcp = %d, want 405 (no GET streams)", resp.StatusCode)
	}
}

func TestMCPOrigin(t *testing.T) {
	t.Parallel()
	const allowed = "https://inspector.example:6274"
	srv := startServer(t, sqliteStore(t), Config{AllowedOrigins: []string{allowed + "/"}})
	rebound := "evil.example:" + strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	for _, tc := range []struct {
		origin, host string
		want         int
	}{
		{"", "", http.StatusOK}, // CLI clients send no Origin
		{srv.URL, "", http.StatusOK},
		{allowed, "", http.StatusOK},
		{strings.ToUpper(allowed), "", http.StatusOK},
		{"http://evil.example", "", http.StatusForbidden},
		{"http://127.0.0.1:1", "", http.StatusOK}, // a local page calling a server on loopback
		{"null", "", http.StatusForbidden},
		// DNS rebinding: evil.example now resolves to 127.0.0.1, so the
		// browser sends it as both Host and Origin.
		{"http://" + rebound, rebound, http.StatusForbidden},
	} {
		header := mcpHeader("Origin", tc.origin, "Host", tc.host)
		resp, body := do(t, http.MethodPost, srv.URL+"/mcp", initializeBody, header)
		if resp.StatusCode != tc.want {
			t.Errorf("POST /mcp with Origin %q, Host %q = %d, want %d\n%s", tc.origin, tc.host, resp.StatusCode, tc.want, body)
		} else if tc.want == http.StatusForbidden && tc.host == "" {
			if res := decodeRPC(t, resp.Header.Get("Content-Type"), body); res.Error == nil || !strings.Contains(res.Error.Message, "CTALK_ALLOWED_ORIGINS") {
				t.Errorf("POST /mcp with Origin %q = %s, want a JSON-RPC error naming CTALK_ALLOWED_ORIGINS", tc.origin, body)
			}
		}
	}
}

func TestMCPBodyLimit(t *testing.T) {
	t.Parallel()
	store := sqliteStore(t)
	for _, limit := range []int64{2048, 0} {
		srv := startServer(t, store, Config{MaxBodyBytes: limit})
		if limit == 0 {
			limit = DefaultMaxBodyBytes
		}
		big := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", int(limit)) + `"}}`
		status, res := postMCP(t, srv.URL, big, mcpHeader())
		if status != http.StatusRequestEntityTooLarge || res.Error == nil || !strings.Contains(res.Error.Message, strconv.FormatInt(limit, 10)) {
			t.Errorf("POST /mcp of %d bytes, limit %d = %d %+v, want 413 and a JSON-RPC error naming the limit", len(big), limit, status, res)
		}
		if status, res := postMCP(t, srv.URL, initializeBody, mcpHeader()); status != http.StatusOK || res.Error != nil {
			t.Errorf("initialize after an oversized request = %d %+v, want 200 with a result", status, res)
		}
	}
}

func TestMCPBadRequests(t *testing.T) {
	t.Parallel()
	srv := startServer(t, sqliteStore(t), Config{})
	session := initSession(t, srv.URL)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":`,              // malformed
		`[` + initializeBody + `,` + toolsListBody + `]`, // batch
		`[]`, ``, `"tools/list"`, `null`,
		`{"jsonrpc":"2.0","id":7,"method":"no/such/method"}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"nope","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":[1,2]}`,
	} {
		resp, b := do(t, http.MethodPost, srv.URL+"/mcp", body, session)
		if resp.StatusCode >= 500 {
			t.Errorf("POST /mcp %s = %d, want no 5xx\n%s", body, resp.StatusCode, b)
			continue
		}
		if res := decodeRPC(t, resp.Header.Get("Content-Type"), b); res.Error == nil || res.Error.Message == "" {
			t.Errorf("POST /mcp %s = %d %s, want a JSON-RPC error", body, resp.StatusCode, b)
		}
	}
	if names := toolNames(t, srv.URL, session); !names["login"] {
		t.Errorf("tools/list after bad requests = %v, want the tools", names)
	}
}

// TestClientAddr: with the private ranges trusted (the hosts' presets),
// X-Forwarded-For counts only from a private or loopback peer, walked from
// the right; IPv6 clients are keyed by their /64.
func TestClientAddr(t *testing.T) {
	t.Parallel()
	private, err := ParseTrustedProxies("private")
	if err != nil {
		t.Fatalf("ParseTrustedProxies(private): %v", err)
	}
	fwd := proxies{trusted: private}
	for _, tc := range []struct {
		remote string
		xff    []string
		want   string
	}{
		{"203.0.113.7:5555", []string{"198.51.100.9"}, "203.0.113.7"}, // public peer: XFF could be forged
		{"10.0.0.5:4000", nil, "10.0.0.5"},
		{"10.0.0.5:4000", []string{"1.2.3.4, 198.51.100.9"}, "198.51.100.9"}, // the proxy appends the client
		{"10.0.0.5:4000", []string{"1.2.3.4", "198.51.100.9"}, "198.51.100.9"},
		{"10.0.0.5:4000", []string{"not-an-ip"}, "10.0.0.5"},
		{"127.0.0.1:4000", []string{"198.51.100.9"}, "198.51.100.9"},
		{"100.64.3.4:4000", []string{"198.51.100.9"}, "198.51.100.9"},
		{"[fd00::1]:4000", []string{"2001:db8::7"}, "2001:db8::/64"},
		{"[::ffff:10.0.0.5]:4000", []string{"198.51.100.9"}, "198.51.100.9"},
		{"[2001:db8::1]:4000", []string{"198.51.100.9"}, "2001:db8::/64"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.RemoteAddr, r.Header["X-Forwarded-For"] = tc.remote, tc.xff
		if got := fwd.clientKey(r); got != tc.want {
			t.Errorf("clientKey(RemoteAddr %s, X-Forwarded-For %q) = %s, want %s", tc.remote, tc.xff, got, tc.want)
		}
	}
}

func TestRequestLogOmitsSecrets(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		var logs testkit.SyncBuffer
		h := newHandler(s, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		const adminPW, userPW, question = "admin-Secret-4242", "user-Secret-1717", "the-private-message-body"
		// Requests run synchronously, so each one's log line is written on return.
		post := func(body []byte, header http.Header) *httptest.ResponseRecorder {
			req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/mcp", bytes.NewReader(body))
			req.Header = header
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		session := post([]byte(initializeBody), mcpHeader()).Header().Get("Mcp-Session-Id")
		call := func(tool, token string, args map[string]any) map[string]any {
			t.Helper()
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
				"params": map[string]any{"name": tool, "arguments": args}})
			header := mcpHeader("Mcp-Session-Id", session)
			if token != "" {
				header.Set("Authorization", "Bearer "+token)
			}
			rec := post(body, header)
			res := decodeRPC(t, rec.Header().Get("Content-Type"), rec.Body.Bytes())
			var out struct {
				IsError           bool
				StructuredContent map[string]any
			}
			if rec.Code != http.StatusOK || res.Error != nil || json.Unmarshal(res.Result, &out) != nil || out.IsError {
				t.Fatalf("%s = %d %s, want a successful tool result", tool, rec.Code, rec.Body)
			}
			return out.StructuredContent
		}
		call("register_organization", "", map[string]any{"org_id": "acme", "name": "Acme", "admin_password": adminPW})
		for _, user := range []string{"john", "umar"} {
			call("register_user", "", map[string]any{"org_id": "acme", "admin_password": adminPW, "user_id": user, "name": user, "password": userPW})
		}
		token, _ := call("login", "", map[string]any{"org_id": "acme", "user_id": "umar", "password": userPW})["auth_token"].(string)
		if token == "" {
			t.Fatalf("login gave no auth_token")
		}
		call("whoami", token, map[string]any{})
		call("ask_person", token, map[string]any{"to_user_id": "john", "question": question})

		out, requests := logs.String(), 0
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "msg=request") {
				requests++
				if !strings.Contains(line, "method=POST path=/mcp status=200") {
					t.Errorf("request log line %q, want method=POST path=/mcp status=200", line)
				}
			}
		}
		if requests != 7 {
			t.Errorf("log has %d request lines, want 7 (one per request):\n%s", requests, out)
		}
		for _, secret := range []string{adminPW, userPW, token, question, "Bearer"} {
			if strings.Contains(out, secret) {
				t.Errorf("log contains %q; it must never hold passwords, tokens, headers or message bodies:\n%s", secret, out)
			}
		}
	})
}

type result struct {
	status int
	body   string
	err    error
}

// serveSlowly runs Serve on a loopback listener with a handler that answers
// 200 "done" after d, starts one request, and cancels ctx once it is in flight.
func serveSlowly(t *testing.T, d, drain time.Duration) (addr string, inFlight <-chan result, served <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	started := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		time.Sleep(d)
		io.WriteString(w, "done") //nolint:errcheck
	})
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	errc, resc := make(chan error, 1), make(chan result, 1)
	go func() { errc <- Serve(ctx, ln, h, drain, nil) }()
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	go func() {
		resp, err := client.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			resc <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		resc <- result{resp.StatusCode, string(b), err}
	}()
	<-started
	cancel()
	return ln.Addr().String(), resc, errc
}

func TestServeDrainsInFlightRequests(t *testing.T) {
	t.Parallel()
	const drain = 5 * time.Second
	addr, inFlight, served := serveSlowly(t, 300*time.Millisecond, drain)
	canceled := time.Now()
	for { // new connections are refused while the request drains
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Since(canceled) > 250*time.Millisecond {
			t.Fatalf("Dial %s still accepted 250ms after shutdown began, want refused", addr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case r := <-inFlight:
		t.Fatalf("in-flight request finished (%+v) before new connections were refused; the test proves nothing", r)
	default:
	}
	if r := <-inFlight; r.err != nil || r.status != http.StatusOK || r.body != "done" {
		t.Errorf("in-flight request during shutdown = %+v, want 200 done", r)
	}
	select {
	case err := <-served:
		if d := time.Since(canceled); err != nil || d > drain {
			t.Errorf("Serve = %v after %v, want nil within the drain time %v", err, d, drain)
		}
	case <-time.After(drain + time.Second):
		t.Fatalf("Serve did not return within the drain time %v", drain)
	}
}

func TestServeDrainTimeout(t *testing.T) {
	t.Parallel()
	_, inFlight, served := serveSlowly(t, time.Second, 50*time.Millisecond)
	select {
	case err := <-served:
		if err == nil {
			t.Errorf("Serve with a drain shorter than the in-flight request = nil, want an error")
		}
	case <-time.After(900 * time.Millisecond):
		t.Fatalf("Serve did not return soon after its 50ms drain time")
	}
	if r := <-inFlight; r.err == nil && r.status == http.StatusOK {
		t.Errorf("request cut off by the drain timeout = %+v, want an error", r)
	}
}
