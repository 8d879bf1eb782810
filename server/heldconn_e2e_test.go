package server_test

// A wait_for_messages left waiting on an HTTP/1 connection is taken over
// from net/http (heldConn): the handler returns and the wait is answered
// later on the connection itself. What a client and an operator notice:
// the answer is the same, it closes the connection, the caps still count
// the wait until it is answered, the request's log line comes when it is
// answered, a client that goes away frees its place, and a drain answers
// every taken-over wait before Serve returns.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/metrics"
	"github.com/ctalk/ctalk/internal/relay"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

// heldConfig is a relay's handler config over store, with metrics and the
// given draining channel (nil: none) and per-address cap.
func heldConfig(store db.Store, draining chan struct{}, perAddress int, logger *slog.Logger) server.Config {
	m := metrics.New("held-conn")
	rules := relay.New(store, relay.Options{Metrics: m, Draining: draining})
	return server.Config{Store: store, Relay: rules, Metrics: m, MetricsToken: metricsToken, Logger: logger,
		MCP: mcp.NewServer(nil, mcp.Options{Relay: rules, Metrics: m}), MaxRequestsPerAddress: perAddress}
}

// rawWait writes a stateless wait_for_messages POST on conn by hand.
func rawWait(t *testing.T, conn net.Conn, host, token string, args map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": map[string]any{
		"name": "wait_for_messages", "arguments": args, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    statelessProtocol,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "held-conn-test", "version": "0"},
		}}})
	req := "POST /mcp HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: " + statelessProtocol + "\r\n" +
		"Mcp-Method: tools/call\r\nMcp-Name: wait_for_messages\r\nAuthorization: Bearer " + token + "\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + string(body)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatalf("write the wait: %v", err)
	}
}

// readAnswer reads one response from r and returns it with its decoded
// structured result (nil when it has none).
func readAnswer(t *testing.T, r *bufio.Reader) (*http.Response, map[string]any) {
	t.Helper()
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("read the answer: %v", err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("read the answer's body: %v", err)
	}
	var out struct {
		Result struct {
			StructuredContent map[string]any `json:"structuredContent"`
		} `json:"result"`
	}
	json.Unmarshal(raw, &out) //nolint:errcheck // nil says it had none
	return resp, out.Result.StructuredContent
}

// TestTakenOverWaitAnswersOnItsConnection: a wait answered at once keeps
// its keep-alive connection; one that waited is answered on its
// connection with the same headers (a request id, JSON, its length) and
// the event, and then the connection is closed, as the answer says.
func TestTakenOverWaitAnswersOnItsConnection(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, store db.Store) {
		srv := httptest.NewServer(server.Handler(heldConfig(store, nil, 64, nil)))
		t.Cleanup(srv.Close)
		tok := seedUsers(t, store, "acme", "umar", "john")
		host := strings.TrimPrefix(srv.URL, "http://")
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		r := bufio.NewReader(conn)

		// At once (nothing to wait for): a keep-alive answer, twice on one connection.
		var cursor string
		for i := range 2 {
			rawWait(t, conn, host, tok["john"], map[string]any{"timeout_seconds": 0})
			resp, res := readAnswer(t, r)
			if resp.StatusCode != http.StatusOK || resp.Close || res == nil || res["cursor"] == nil {
				t.Fatalf("wait %d of 0 s = %d close=%v %v, want a result on a kept connection", i, resp.StatusCode, resp.Close, res)
			}
			cursor, _ = res["cursor"].(string)
		}

		// Waiting: answered when the question comes, then closed.
		rawWait(t, conn, host, tok["john"], map[string]any{"cursor": cursor, "timeout_seconds": 30})
		waitsOpen(t, srv.URL, 1)
		askVia(t, srv.URL+"/mcp", tok["umar"], "john", "Where is the retry logic?")
		conn.SetReadDeadline(time.Now().Add(20 * time.Second)) //nolint:errcheck // then the read fails
		resp, res := readAnswer(t, r)
		events, _ := res["events"].([]any)
		if resp.StatusCode != http.StatusOK || len(events) != 1 || !strings.Contains(fmt.Sprint(events[0]), "Where is the retry logic?") {
			t.Fatalf("woken wait = %d %v, want umar's question", resp.StatusCode, res)
		}
		if !resp.Close || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("X-Request-Id") == "" ||
			resp.ContentLength <= 0 || resp.Header.Get("Date") == "" {
			t.Errorf("woken wait's answer: close=%v headers %v length %d, want Connection: close, JSON, a request id, a date and a length",
				resp.Close, resp.Header, resp.ContentLength)
		}
		if n, err := r.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Errorf("after the woken wait's answer the connection gave %d bytes, %v; want it closed (EOF)", n, err)
		}
		waitsOpen(t, srv.URL, 0)
	})
}

// waitsOpen waits until the relay at base says want waits are open.
func waitsOpen(t *testing.T, base string, want float64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		got := scrape(t, base+"/metrics", authBearer(metricsToken))["ctalk_waits_open"]
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ctalk_waits_open = %v after 10 s, want %v", got, want)
		}
	}
}

// TestTakenOverWaitsKeepTheirPlaces: a taken-over wait still counts
// against its address's cap until it is answered or its client goes, and
// its request's log line is written when it is answered, with its whole
// duration.
func TestTakenOverWaitsKeepTheirPlaces(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, store db.Store) {
		var logs testkit.SyncBuffer
		logger := slog.New(slog.NewJSONHandler(&logs, nil))
		srv := httptest.NewServer(server.Handler(heldConfig(store, nil, 3, logger)))
		t.Cleanup(srv.Close)
		tok := seedUsers(t, store, "acme", "umar", "john", "mia")
		host := strings.TrimPrefix(srv.URL, "http://")
		listBusy := func() bool {
			resp, err := http.Post(srv.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the status matters
			resp.Body.Close()
			return resp.StatusCode == http.StatusServiceUnavailable
		}

		// Two waits (john's, mia's) and a ping fit the cap of 3 ...
		var conns []net.Conn
		for _, who := range []string{"john", "mia"} {
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			rawWait(t, conn, host, tok[who], map[string]any{"cursor": "latest", "timeout_seconds": 30})
			conns = append(conns, conn)
		}
		waitsOpen(t, srv.URL, 2)
		// ... and with them and a third wait open, the address is full.
		third, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		defer third.Close()
		rawWait(t, third, host, tok["umar"], map[string]any{"cursor": "latest", "timeout_seconds": 30})
		for deadline := time.Now().Add(10 * time.Second); !listBusy(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("with three waits open and a cap of 3 per address, a ping was still served")
			}
		}

		// The client that goes away frees its place.
		third.Close()
		for deadline := time.Now().Add(10 * time.Second); listBusy(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("a wait whose client closed its connection still holds its place under the cap")
			}
		}
		waitsOpen(t, srv.URL, 2)

		// john's wait, answered after 300 ms, is logged then, with that duration.
		time.Sleep(300 * time.Millisecond)
		askVia(t, srv.URL+"/mcp", tok["umar"], "john", "Which queue?")
		conns[0].SetReadDeadline(time.Now().Add(20 * time.Second)) //nolint:errcheck // then the read fails
		if resp, res := readAnswer(t, bufio.NewReader(conns[0])); resp.StatusCode != http.StatusOK || len(res["events"].([]any)) != 1 {
			t.Fatalf("john's wait = %d %v, want his question", resp.StatusCode, res)
		}
		var waited []map[string]any
		for deadline := time.Now().Add(10 * time.Second); len(waited) == 0; time.Sleep(10 * time.Millisecond) {
			for line := range strings.SplitSeq(logs.String(), "\n") {
				var l map[string]any
				if json.Unmarshal([]byte(line), &l) == nil && l["msg"] == "request" && l["path"] == "/mcp" {
					if d, _ := l["duration_ms"].(float64); d >= 300 {
						waited = append(waited, l)
					}
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no request line with the held wait's duration (>= 300 ms) in the log:\n%s", logs.String())
			}
		}
		if len(waited) != 1 || waited[0]["status"] != float64(http.StatusOK) {
			t.Errorf("request lines of waits of 300 ms or more = %v, want john's alone, status 200 (mia's is still open)", waited)
		}
	})
}

// TestDrainAnswersTakenOverWaits: when the server is told to stop, Serve
// returns only once every taken-over wait is answered: at once when the
// relay's drain ends them (the relay is restarting: call again), or when
// they end by themselves (here their 2 s timeout, with a relay that is not
// told of the drain). Serve then returns nil, with no wait left open.
func TestDrainAnswersTakenOverWaits(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, store db.Store) {
		tok := seedUsers(t, store, "acme", "umar", "john", "mia")
		for _, tc := range []struct {
			name    string
			relay   bool // the relay is told of the drain
			timeout int
			want    string
		}{
			{"the relay's drain ends them", true, 50, "restarting"},
			{"they end by themselves", false, 2, "Nothing new within 2s"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var draining chan struct{}
				if tc.relay {
					draining = make(chan struct{})
				}
				cfg := heldConfig(store, draining, 64, nil)
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				ctx, stop := context.WithCancel(t.Context())
				served := make(chan error, 1)
				go func() { served <- server.Serve(ctx, ln, server.Handler(cfg), 10*time.Second, draining) }()
				base := "http://" + ln.Addr().String()

				const n = 3
				var wg sync.WaitGroup
				answers := make([]string, n)
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						a := rpcCall{proto: statelessProtocol, token: tok[[]string{"umar", "john", "mia"}[i]],
							args: map[string]any{"cursor": "latest", "timeout_seconds": tc.timeout}}.post(t, base+"/mcp")
						b, _ := json.Marshal(a.Body)
						answers[i] = strconv.Itoa(a.Status) + " " + string(b)
					}()
				}
				waitsOpen(t, base, n)
				stop()
				select {
				case err = <-served:
				case <-time.After(15 * time.Second):
					t.Fatal("Serve did not return within its drain time")
				}
				// When Serve returns, every wait has been answered and released.
				var b bytes.Buffer
				server.MetricsHandler(cfg.Metrics).ServeHTTP(httptestRecorder(&b), httptest.NewRequest(http.MethodGet, "/metrics", nil))
				if !strings.Contains(b.String(), "\nctalk_waits_open 0\n") {
					t.Errorf("when Serve returned, ctalk_waits_open was not 0:\n%s", grepLines(b.String(), "ctalk_waits_open"))
				}
				if err != nil {
					t.Errorf("Serve = %v, want nil (the waits were answered within the drain)", err)
				}
				wg.Wait()
				for i, a := range answers {
					if !strings.HasPrefix(a, "200 ") || !strings.Contains(a, tc.want) || !strings.Contains(a, `"timed_out":true`) {
						t.Errorf("wait %d at the drain = %s, want 200, timed_out, %q", i, a, tc.want)
					}
				}
			})
		}
	})
}

// httptestRecorder is a ResponseWriter writing the body into b.
func httptestRecorder(b *bytes.Buffer) http.ResponseWriter {
	rec := httptest.NewRecorder()
	rec.Body = b
	return rec
}

// grepLines is the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// TestTakenOverWaitsThroughGoSDK: the official Go SDK client (stateless
// protocol, one client all along) waits, is woken, times out and waits
// again. Each wait that waited is answered on its own connection, which
// then closes, and the client carries on over a new one: one new
// connection per waited answer, no failed call. Both backends.
func TestTakenOverWaitsThroughGoSDK(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, store db.Store) {
		srv := httptest.NewServer(server.Handler(heldConfig(store, nil, 64, nil)))
		t.Cleanup(srv.Close)
		tok := seedUsers(t, store, "acme", "umar", "john")
		var dials atomic.Int64
		dialer := &net.Dialer{}
		transport := &sdk.StreamableClientTransport{
			Endpoint: srv.URL + "/mcp",
			HTTPClient: &http.Client{Timeout: time.Minute, Transport: headerTransport{&http.Transport{
				DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
					dials.Add(1)
					return dialer.DialContext(ctx, network, addr)
				},
			}, http.Header{"Authorization": {"Bearer " + tok["john"]}}}},
			MaxRetries: -1,
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "held-conn-sdk", Version: "1.0.0"}, nil).
			Connect(t.Context(), transport, &sdk.ClientSessionOptions{ProtocolVersion: statelessProtocol})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })

		cursor := callOK[waitOut](t, cs, "wait_for_messages", args{"timeout_seconds": 0, "cursor": "latest"}).Cursor
		before := dials.Load()
		const rounds = 3
		for i := range rounds {
			got := make(chan waitOut, 1)
			go func() {
				got <- callOK[waitOut](t, cs, "wait_for_messages", args{"timeout_seconds": 30, "cursor": cursor})
			}()
			waitsOpen(t, srv.URL, 1) // held: taken over, not answered at once
			q := fmt.Sprintf("Round %d: which queue?", i)
			askVia(t, srv.URL+"/mcp", tok["umar"], "john", q)
			out := <-got
			if len(out.Events) != 1 || out.Events[0].Question != q {
				t.Fatalf("round %d: woken wait = %+v, want umar's question %q", i, out, q)
			}
			cursor = out.Cursor
		}
		// A wait that times out is answered the same way.
		if out := callOK[waitOut](t, cs, "wait_for_messages", args{"timeout_seconds": 1, "cursor": cursor}); !out.TimedOut || len(out.Events) != 0 {
			t.Errorf("a wait of 1 s with nothing new = %+v, want timed out", out)
		}
		// The same client still makes any call.
		if who := callOK[map[string]any](t, cs, "whoami", args{}); who["user_id"] != "john" {
			t.Errorf("whoami after the waits = %v, want john", who)
		}
		if n := dials.Load() - before; n < rounds+1 {
			t.Errorf("%d new connections for %d waited answers, want one each: the connection of a waited answer is closed", n, rounds+1)
		}
	})
}
