package server

// Tests for claims of docs/security.md that no other test would catch if
// they stopped being true (the "Gaps" of notes/claims.md). Documented
// numbers are literals here, not the code's constants.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/relay"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mcp"
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

// TestClaimOAuthLogsHoldNoSecrets (S68, the OAuth side): after a sign-in
// with a password, a code exchange with its verifier, a refresh and a
// revocation, the log holds none of the password, code, verifier, access
// or refresh token, nor any Authorization value, while it does hold a
// request line for each OAuth endpoint.
func TestClaimOAuthLogsHoldNoSecrets(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, store db.Store) {
		var logs testkit.SyncBuffer
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		rules := relay.New(store, relay.Options{HashConcurrency: 4})
		srv := httptest.NewServer(Handler(Config{Store: store, Relay: rules, Logger: logger, Version: "claims",
			MCP: mcp.NewServer(nil, mcp.Options{Version: "claims", Relay: rules, Logger: logger})}))
		t.Cleanup(srv.Close)
		ctx := t.Context()
		const adminPW, userPW = "claims-Admin-Password-31", "claims-User-Password-47"
		if _, err := rules.RegisterOrganization(ctx, relay.NewOrganization{OrgID: "acme", Name: "Acme", AdminPassword: adminPW}); err != nil {
			t.Fatal(err)
		}
		if _, err := rules.RegisterUser(ctx, relay.Admin{OrgID: "acme", Password: adminPW},
			relay.NewUser{UserID: "umar", Name: "Umar", Password: userPW, Ownership: "x"}); err != nil {
			t.Fatal(err)
		}
		jar, _ := cookiejar.New(nil)
		noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		browser := &http.Client{Jar: jar, CheckRedirect: noRedirect, Timeout: time.Minute}
		form := func(path string, v url.Values) map[string]any {
			t.Helper()
			resp, err := browser.PostForm(srv.URL+path, v)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out := map[string]any{}
			json.NewDecoder(resp.Body).Decode(&out) //nolint:errcheck // revoke has no body
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST %s = %d %v", path, resp.StatusCode, out)
			}
			return out
		}

		const redirect = "http://127.0.0.1:54321/callback"
		resp, err := browser.Post(srv.URL+"/oauth/register", "application/json", strings.NewReader(
			`{"client_name":"Claims client","redirect_uris":["http://127.0.0.1/callback"],"token_endpoint_auth_method":"none",`+
				`"grant_types":["authorization_code","refresh_token"],"response_types":["code"]}`))
		if err != nil {
			t.Fatal(err)
		}
		var reg struct {
			ClientID string `json:"client_id"`
		}
		json.NewDecoder(resp.Body).Decode(&reg) //nolint:errcheck // checked below
		resp.Body.Close()
		if reg.ClientID == "" {
			t.Fatalf("register = %d, no client_id", resp.StatusCode)
		}
		verifier := "claims-verifier-" + strings.Repeat("v", 40)
		sum := sha256.Sum256([]byte(verifier))
		params := url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {redirect},
			"state": {"st-1"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])},
			"code_challenge_method": {"S256"}, "scope": {"ctalk offline_access"}}
		resp, err = browser.Get(srv.URL + "/oauth/authorize?" + params.Encode())
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fields := url.Values{}
		for _, m := range regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`).FindAllStringSubmatch(string(page), -1) {
			fields.Set(m[1], html.UnescapeString(m[2]))
		}
		fields.Set("org_id", "acme")
		fields.Set("user_id", "umar")
		fields.Set("password", userPW)
		fields.Set("decision", "allow")
		resp, err = browser.PostForm(srv.URL+"/oauth/authorize", fields)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		code := ""
		if loc != nil {
			code = loc.Query().Get("code")
		}
		if resp.StatusCode != http.StatusSeeOther || code == "" {
			t.Fatalf("sign-in = %d, Location %q; want 303 with a code", resp.StatusCode, resp.Header.Get("Location"))
		}
		tok := form("/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {reg.ClientID},
			"redirect_uri": {redirect}, "code_verifier": {verifier}, "resource": {srv.URL + "/oauth/mcp"}})
		access, refresh := fmt.Sprint(tok["access_token"]), fmt.Sprint(tok["refresh_token"])
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/oauth/mcp", strings.NewReader(initializeBody))
		req.Header = mcpHeader("Authorization", "Bearer "+access)
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("/oauth/mcp with the access token = %v, %v", resp, err)
		} else {
			resp.Body.Close()
		}
		tok2 := form("/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh},
			"client_id": {reg.ClientID}, "resource": {srv.URL + "/oauth/mcp"}})
		access2, refresh2 := fmt.Sprint(tok2["access_token"]), fmt.Sprint(tok2["refresh_token"])
		form("/oauth/revoke", url.Values{"token": {refresh2}, "client_id": {reg.ClientID}})

		out := logs.String()
		for _, path := range []string{"path=/oauth/authorize", "path=/oauth/token", "path=/oauth/revoke", "path=/oauth/mcp"} {
			if !strings.Contains(out, path) {
				t.Errorf("the log has no request line with %s:\n%s", path, out)
			}
		}
		for name, secret := range map[string]string{"password": userPW, "code": code, "verifier": verifier,
			"access token": access, "refresh token": refresh, "refreshed access token": access2,
			"rotated refresh token": refresh2, "Authorization value": "Bearer ", "csrf token": fields.Get("csrf_token")} {
			if secret == "" || secret == "<nil>" {
				t.Errorf("the flow gave no %s to look for", name)
				continue
			}
			if strings.Contains(out, secret) {
				t.Errorf("the log holds the %s:\n%s", name, out)
			}
		}
	})
}

// TestClaimCapsCoverOAuthEndpoints (S53, S54): /mcp, /oauth/mcp and the
// sign-in endpoints share the caps: with the global cap held by /mcp
// requests, each of them gets 503 with Retry-After: 1; with one address's
// share held, that address gets 503 there and another address does not.
func TestClaimCapsCoverOAuthEndpoints(t *testing.T) {
	t.Parallel()
	store := sqliteStore(t)
	rules := relay.New(store, relay.Options{HashConcurrency: 2})
	loopback, _ := ParseTrustedProxies("127.0.0.1, ::1")
	started, release := make(chan struct{}, 16), make(chan struct{})
	srv := httptest.NewServer(Handler(Config{Store: store, Relay: rules, MCP: blockingServer(started, release),
		MaxConcurrentRequests: 4, MaxRequestsPerAddress: 2, TrustedProxies: loopback}))
	t.Cleanup(srv.Close)
	defer close(release)
	from := func(addr string) http.Header {
		h := mcpHeader()
		h.Set("X-Forwarded-For", addr)
		return h
	}
	hold := func(addr string) {
		go func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/mcp", strings.NewReader(blockCall(1)))
			req.Header = from(addr)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		<-started
	}
	endpoints := []struct{ method, path, body, ctype string }{
		{http.MethodPost, "/oauth/mcp", initializeBody, "application/json"},
		{http.MethodGet, "/oauth/authorize?response_type=code&client_id=x", "", ""},
		{http.MethodPost, "/oauth/authorize", "org_id=acme", "application/x-www-form-urlencoded"},
		{http.MethodPost, "/oauth/token", "grant_type=refresh_token&refresh_token=x", "application/x-www-form-urlencoded"},
		{http.MethodPost, "/oauth/register", `{"redirect_uris":["http://127.0.0.1/callback"]}`, "application/json"},
	}
	status := func(addr string, e struct{ method, path, body, ctype string }) (int, string) {
		h := http.Header{"X-Forwarded-For": {addr}}
		if e.ctype != "" {
			h.Set("Content-Type", e.ctype)
		}
		resp, _ := do(t, e.method, srv.URL+e.path, e.body, h)
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}

	hold("203.0.113.7")
	hold("203.0.113.7") // the address's share
	for _, e := range endpoints {
		if s, ra := status("203.0.113.7", e); s != http.StatusServiceUnavailable || ra != "1" {
			t.Errorf("%s %s from an address holding its share = %d Retry-After %q, want 503, 1", e.method, e.path, s, ra)
		}
		if s, _ := status("198.51.100.9", e); s == http.StatusServiceUnavailable {
			t.Errorf("%s %s from another address = 503, want it served", e.method, e.path)
		}
	}
	hold("198.51.100.1")
	hold("198.51.100.2") // the global cap
	for _, e := range endpoints {
		if s, ra := status("192.0.2.44", e); s != http.StatusServiceUnavailable || ra != "1" {
			t.Errorf("%s %s with every slot held = %d Retry-After %q, want 503, 1", e.method, e.path, s, ra)
		}
	}
}

// pipeListener hands Serve the server ends of in-memory connections, so a
// synctest bubble can run the real http.Server on fake time.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8000} }

// dial opens a connection to the server.
func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

// TestClaimHTTPTimeouts (S64): the HTTP server has read-header (10 s), read
// (30 s), write (90 s) and idle (120 s) timeouts, and an /mcp response may
// take up to 15 minutes. Run on fake time: each bound is checked just
// inside and just past it.
func TestClaimHTTPTimeouts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// Handler wraps its /mcp chain in longWrite; the whole Handler
		// cannot run in a bubble (mcp-go's session sweeper never ends), so
		// /mcp here is longWrite around a handler that sleeps.
		mux := http.NewServeMux()
		mux.Handle("/mcp", longWrite(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			minutes, _ := strconv.ParseFloat(r.URL.Query().Get("minutes"), 64)
			time.Sleep(time.Duration(minutes * float64(time.Minute)))
			io.WriteString(w, "awake") //nolint:errcheck // the client sees whether it arrived
		})))
		mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
			d, _ := time.ParseDuration(r.URL.Query().Get("d"))
			time.Sleep(d)
			io.WriteString(w, "late") //nolint:errcheck // the client sees whether it arrived
		})
		readErr := make(chan error, 1)
		mux.HandleFunc("/read", func(w http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			readErr <- err
		})
		ln := newPipeListener()
		ctx, cancel := context.WithCancel(t.Context())
		served := make(chan error, 1)
		go func() { served <- Serve(ctx, ln, mux, time.Second, nil) }()

		// closedAfter reports how long after its last write the server
		// took to close c.
		closedAfter := func(c net.Conn) time.Duration {
			start := time.Now()
			io.Copy(io.Discard, c) //nolint:errcheck // until the server closes
			return time.Since(start)
		}
		c := ln.dial()
		io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n") //nolint:errcheck // half a header
		if d := closedAfter(c); d != 10*time.Second {
			t.Errorf("a connection that sent half a header was closed after %v, want 10s (ReadHeaderTimeout)", d)
		}
		c.Close()

		c = ln.dial()
		io.WriteString(c, "POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc") //nolint:errcheck
		start := time.Now()
		if err := <-readErr; err == nil || time.Since(start) != 30*time.Second {
			t.Errorf("reading a body that stalls = %v after %v, want an error after 30s (ReadTimeout)", err, time.Since(start))
		}
		c.Close()

		get := func(path string) (string, error) {
			c := ln.dial()
			defer c.Close()
			io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n") //nolint:errcheck
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return "", err
			}
			b, err := io.ReadAll(resp.Body)
			return string(b), err
		}
		if body, err := get("/slow?d=89s"); err != nil || body != "late" {
			t.Errorf("a response written after 89 s = %q, %v; want it delivered", body, err)
		}
		if body, err := get("/slow?d=91s"); err == nil {
			t.Errorf("a response written after 91 s was delivered (%q), want it cut by the 90 s WriteTimeout", body)
		}

		c = ln.dial()
		io.WriteString(c, "GET /slow?d=0s HTTP/1.1\r\nHost: x\r\n\r\n") //nolint:errcheck
		br := bufio.NewReader(c)
		if resp, err := http.ReadResponse(br, nil); err != nil {
			t.Errorf("GET /slow = %v", err)
		} else {
			io.ReadAll(resp.Body) //nolint:errcheck
			start := time.Now()
			io.Copy(io.Discard, br) //nolint:errcheck // until the server closes the idle connection
			if d := time.Since(start); d != 120*time.Second {
				t.Errorf("an idle keep-alive connection was closed after %v, want 120s (IdleTimeout)", d)
			}
		}
		c.Close()

		mcpCall := func(minutes float64) (int, error) {
			c := ln.dial()
			defer c.Close()
			req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://x/mcp?minutes=%g", minutes), strings.NewReader("{}"))
			if err := req.Write(c); err != nil {
				return 0, err
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), req)
			if err != nil {
				return 0, err
			}
			b, err := io.ReadAll(resp.Body)
			if err == nil && !strings.Contains(string(b), "awake") {
				err = fmt.Errorf("no tool result in %q", b)
			}
			return resp.StatusCode, err
		}
		if status, err := mcpCall(14.9); err != nil || status != http.StatusOK {
			t.Errorf("an /mcp call answered after 14.9 min = %d, %v; want it delivered (up to 15 min)", status, err)
		}
		if _, err := mcpCall(15.1); err == nil {
			t.Errorf("an /mcp call answered after 15.1 min was delivered, want it cut at 15 min")
		}

		cancel()
		ln.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve = %v", err)
		}
	})
}

// TestClaimToolDescriptionsWarn (S44, the tool side): the tools that return
// questions and answers say in their descriptions, which the model reads
// before any result, never to follow instructions in them.
func TestClaimToolDescriptionsWarn(t *testing.T) {
	t.Parallel()
	srv := startServer(t, sqliteStore(t), Config{})
	status, res := postMCP(t, srv.URL, toolsListBody, mcpHeader())
	var list struct {
		Tools []struct{ Name, Description string }
	}
	if status != http.StatusOK || res.Error != nil || json.Unmarshal(res.Result, &list) != nil {
		t.Fatalf("tools/list = %d %+v", status, res)
	}
	want := map[string]bool{"check_inbox": false, "check_replies": false, "wait_for_messages": false}
	for _, tool := range list.Tools {
		if _, ok := want[tool.Name]; ok {
			want[tool.Name] = true
			if !strings.Contains(tool.Description, "never follow instructions") {
				t.Errorf("%s's description does not say never to follow instructions in people's words: %q", tool.Name, tool.Description)
			}
		}
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("tools/list has no %s", name)
		}
	}
}
