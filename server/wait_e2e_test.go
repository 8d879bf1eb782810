package server_test

// Tests of wait_for_messages through the real HTTP handler, as replicas run
// it: plain JSON-RPC POSTs to /mcp, one call per request, tokens in the
// Authorization header.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

// relayURL serves ctalk over store on a local port until the test ends and
// returns its /mcp URL.
func relayURL(t *testing.T, store db.Store) string {
	t.Helper()
	ts := httptest.NewServer(server.Handler(server.Config{Store: store, MCP: mcp.NewServer(store, mcp.Options{})}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

const statelessProtocol = "2026-07-28"

// waitClient makes one JSON-RPC POST per call; its transport keeps one
// connection per concurrent call, as separate clients would.
var waitClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1100, MaxConnsPerHost: 0}}

// toolResult is the part of a tools/call result the tests read.
type toolResult struct {
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Content           []struct {
		Text string `json:"text"`
	} `json:"content"`
}

// callTool calls a tool over HTTP with a bearer token; a protocol or
// transport error is returned as err.
func callTool(ctx context.Context, mcpURL, token, tool string, args map[string]any) (toolResult, error) {
	// The stateless protocol generation: every request stands alone, as a
	// client that reaches any replica behind a load balancer sends it.
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    statelessProtocol,
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "ctalk-wait-test", "version": "0"},
		}},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, mcpURL, bytes.NewReader(body))
	if err != nil {
		return toolResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", statelessProtocol)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := waitClient.Do(req)
	if err != nil {
		return toolResult{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return toolResult{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return toolResult{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, raw)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw = lastSSEData(raw)
	}
	var msg struct {
		Result *toolResult `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		return toolResult{}, fmt.Errorf("decode %s: %w", raw, err)
	}
	if msg.Error != nil || msg.Result == nil {
		return toolResult{}, fmt.Errorf("JSON-RPC error: %s", raw)
	}
	return *msg.Result, nil
}

// lastSSEData returns the data of the last event in an SSE body.
func lastSSEData(body []byte) []byte {
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
			last = append([]byte(nil), bytes.TrimSpace(d)...)
		}
	}
	return last
}

// mustCall runs a tool that must succeed and decodes its structured content.
func mustCall[T any](t *testing.T, mcpURL, token, tool string, args map[string]any) T {
	t.Helper()
	res, err := callTool(t.Context(), mcpURL, token, tool, args)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		t.Fatalf("%s: isError %q, want success", tool, res.Content)
	}
	var out T
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
		t.Fatalf("%s: decode %s: %v", tool, res.StructuredContent, err)
	}
	return out
}

// waitOut mirrors a wait_for_messages result.
type waitOut struct {
	Events []struct {
		Kind      string `json:"kind"`
		Cursor    string `json:"cursor"`
		MessageID int64  `json:"message_id"`
		From      struct {
			UserID string `json:"user_id"`
			Name   string `json:"name"`
		} `json:"from"`
		Question        string `json:"question"`
		Answer          string `json:"answer"`
		AlreadyAnswered bool   `json:"already_answered"`
	} `json:"events"`
	Cursor   string `json:"cursor"`
	More     bool   `json:"more"`
	TimedOut bool   `json:"timed_out"`
	NextStep string `json:"next_step"`
}

func waitFor(t *testing.T, mcpURL, token string, timeout int, cursor string) waitOut {
	t.Helper()
	return mustCall[waitOut](t, mcpURL, token, "wait_for_messages", map[string]any{"timeout_seconds": timeout, "cursor": cursor})
}

// newTokenFor stores a login token for a user directly (no password hashing)
// and returns it: the same shape and hash login produces.
func newTokenFor(ctx context.Context, q db.Queries, orgID, userID string) (string, error) {
	b := make([]byte, 32)
	rand.Read(b)
	token := "ctalk_" + base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(token))
	now := time.Now().UTC().Truncate(time.Microsecond)
	return token, q.CreateToken(ctx, db.Token{TokenHash: sum[:], OrgID: orgID, UserID: userID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
}

// seedUsers creates an organization with users and returns their tokens,
// directly in the database: these tests are about waiting, not logging in.
func seedUsers(t *testing.T, s db.Store, orgID string, userIDs ...string) map[string]string {
	t.Helper()
	tokens := map[string]string{}
	err := s.InTx(t.Context(), func(q db.Queries) error {
		now := time.Now().UTC().Truncate(time.Microsecond)
		if err := q.CreateOrganization(t.Context(), db.Organization{ID: orgID, Name: "Org " + orgID, AdminPasswordHash: "x", CreatedAt: now}); err != nil {
			return err
		}
		for _, id := range userIDs {
			u := db.User{OrgID: orgID, ID: id, Name: strings.ToUpper(id[:1]) + id[1:], PasswordHash: "x", Ownership: id + "-repo", CreatedAt: now}
			if err := q.CreateUser(t.Context(), u); err != nil {
				return err
			}
			tok, err := newTokenFor(t.Context(), q, orgID, id)
			if err != nil {
				return err
			}
			tokens[id] = tok
		}
		return nil
	})
	if err != nil {
		t.Fatalf("seed %s: %v", orgID, err)
	}
	return tokens
}

func askVia(t *testing.T, mcpURL, token, to, question string) int64 {
	t.Helper()
	return mustCall[struct {
		MessageID int64 `json:"message_id"`
	}](t, mcpURL, token, "ask_person", map[string]any{"to_user_id": to, "question": question}).MessageID
}

// answerVia sends an answer the way a client without elicitation must:
// propose it, then send the same text.
func answerVia(t *testing.T, mcpURL, token string, id int64, text string) {
	t.Helper()
	mustCall[map[string]any](t, mcpURL, token, "propose_response", map[string]any{"message_id": id, "draft_text": text})
	mustCall[map[string]any](t, mcpURL, token, "send_response", map[string]any{"message_id": id, "final_text": text})
}

func TestWaitReturnsWhatIsThere(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		u := relayURL(t, s)
		tok := seedUsers(t, s, "acme", "umar", "john")
		seedUsers(t, s, "other", "john") // another organization's john sees nothing of acme's

		// Nothing yet: timeout 0 only checks.
		got := waitFor(t, u, tok["john"], 0, "")
		if len(got.Events) != 0 || got.Cursor != "0" || got.TimedOut {
			t.Errorf("wait on an empty inbox = %+v, want no events, cursor 0, not timed out", got)
		}

		q1 := askVia(t, u, tok["umar"], "john", "What is the retry logic?")
		q2 := askVia(t, u, tok["umar"], "john", "And the backoff?")
		got = waitFor(t, u, tok["john"], 30, "")
		type ev struct{ Kind, From, Question, Answer string }
		view := func(w waitOut) []ev {
			var out []ev
			for _, e := range w.Events {
				out = append(out, ev{e.Kind, e.From.UserID, e.Question, e.Answer})
			}
			return out
		}
		want := []ev{{"question", "umar", "What is the retry logic?", ""}, {"question", "umar", "And the backoff?", ""}}
		if diff := cmp.Diff(want, view(got)); diff != "" {
			t.Errorf("john's events mismatch (-want +got):\n%s", diff)
		}
		if got.Events[0].MessageID != q1 || got.Events[1].MessageID != q2 || got.Cursor != got.Events[1].Cursor {
			t.Errorf("events %+v cursor %q, want messages %d, %d and the last event's cursor", got.Events, got.Cursor, q1, q2)
		}
		johnCursor := got.Cursor

		answerVia(t, u, tok["john"], q1, "Three attempts.")
		got = waitFor(t, u, tok["umar"], 30, "")
		if diff := cmp.Diff([]ev{{"answer", "john", "What is the retry logic?", "Three attempts."}}, view(got)); diff != "" {
			t.Errorf("umar's events mismatch (-want +got):\n%s", diff)
		}
		// John's cursor is past both questions; the answer he sent is not his event.
		if got := waitFor(t, u, tok["john"], 0, johnCursor); len(got.Events) != 0 || got.Cursor != johnCursor {
			t.Errorf("john waits after his cursor = %+v, want nothing and the same cursor", got)
		}
		// From the start, the answered question says so.
		if got := waitFor(t, u, tok["john"], 0, ""); !got.Events[0].AlreadyAnswered || got.Events[1].AlreadyAnswered {
			t.Errorf("already_answered = %v, %v; want true, false", got.Events[0].AlreadyAnswered, got.Events[1].AlreadyAnswered)
		}
		// "latest" starts after everything so far.
		if got := waitFor(t, u, tok["umar"], 0, "latest"); len(got.Events) != 0 || got.Cursor != "3" {
			t.Errorf(`wait from "latest" = %+v, want nothing and cursor 3 (the organization's last event)`, got)
		}

		// A page holds 20 events and says there is more.
		for i := range 21 {
			askVia(t, u, tok["john"], "umar", fmt.Sprintf("question %d", i))
		}
		page := waitFor(t, u, tok["umar"], 0, got.Cursor)
		if len(page.Events) != 20 || !page.More {
			t.Fatalf("first page: %d events, more=%v; want 20, true", len(page.Events), page.More)
		}
		rest := waitFor(t, u, tok["umar"], 0, page.Cursor)
		if len(rest.Events) != 1 || rest.More || rest.Events[0].Question != "question 20" {
			t.Errorf("second page = %+v, want question 20 alone", rest.Events)
		}

		for _, c := range []string{"abc", "-1", "1.5"} {
			res, err := callTool(t.Context(), u, tok["umar"], "wait_for_messages", map[string]any{"cursor": c, "timeout_seconds": 0})
			if err != nil || !res.IsError {
				t.Errorf("wait with cursor %q = %+v, %v; want an isError result", c, res, err)
			}
		}
		res, err := callTool(t.Context(), u, "", "wait_for_messages", map[string]any{"timeout_seconds": 0})
		if err != nil || !res.IsError {
			t.Errorf("wait without a token = %+v, %v; want an isError result", res, err)
		}
	})
}

func TestWaitTimesOutWithAnEmptyResult(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		u := relayURL(t, s)
		tok := seedUsers(t, s, "acme", "umar", "john")
		askVia(t, u, tok["umar"], "john", "seen already")
		start := time.Now()
		got := waitFor(t, u, tok["john"], 1, "1")
		took := time.Since(start)
		if len(got.Events) != 0 || got.Cursor != "1" || !got.TimedOut {
			t.Errorf("wait that times out = %+v, want no events, cursor 1, timed_out", got)
		}
		if took < time.Second || took > 3*time.Second {
			t.Errorf("a 1 s wait took %v", took)
		}
		// Text numbers work too; more than the bound waits the bound (not checked: 55 s).
		got = mustCall[waitOut](t, u, tok["john"], "wait_for_messages", map[string]any{"timeout_seconds": "0", "cursor": 1})
		if got.Cursor != "1" {
			t.Errorf(`wait with timeout "0" and numeric cursor 1 = %+v, want cursor 1`, got)
		}
	})
}

// TestWaitWakesAcrossReplicas runs two relays: a waiter on one wakes within
// a second when a question (then an answer) is sent through the other. On
// PostgreSQL they are two stores on one database, as two server processes
// are; on SQLite, two handlers over one store in one process.
func TestWaitWakesAcrossReplicas(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		storeA := dbtest.Open(t, cfg)
		storeB := storeA
		if cfg.DatabaseURL != "" {
			storeB = dbtest.Open(t, cfg)
		}
		relayA, relayB := relayURL(t, storeA), relayURL(t, storeB)
		tok := seedUsers(t, storeB, "acme", "umar", "john")

		type waited struct {
			out waitOut
			at  time.Time
			err error
		}
		wait := func(token, cursor string) chan waited {
			ch := make(chan waited, 1)
			go func() {
				res, err := callTool(t.Context(), relayA, token, "wait_for_messages", map[string]any{"timeout_seconds": 20, "cursor": cursor})
				var w waited
				w.at, w.err = time.Now(), err
				if err == nil {
					w.err = json.Unmarshal(res.StructuredContent, &w.out)
				}
				ch <- w
			}()
			return ch
		}
		check := func(ch chan waited, sent time.Time, want string) waitOut {
			t.Helper()
			w := <-ch
			if w.err != nil {
				t.Fatalf("wait: %v", w.err)
			}
			latency := w.at.Sub(sent)
			if len(w.out.Events) != 1 || w.out.Events[0].Kind != want {
				t.Fatalf("wait returned %+v, want one %s", w.out, want)
			}
			t.Logf("%s: %s reached a waiter on the other relay %v after it was sent", storeA.Backend(), want, latency)
			if latency > time.Second {
				t.Errorf("%s reached the waiter after %v, want within 1s", want, latency)
			}
			return w.out
		}

		johnWaits := wait(tok["john"], "")
		time.Sleep(500 * time.Millisecond) // let the waiter settle into waiting
		sent := time.Now()
		id := askVia(t, relayB, tok["umar"], "john", "ping from the other replica")
		check(johnWaits, sent, "question")

		umarWaits := wait(tok["umar"], "latest")
		time.Sleep(500 * time.Millisecond)
		mustCall[map[string]any](t, relayB, tok["john"], "propose_response", map[string]any{"message_id": id, "draft_text": "pong"})
		sent = time.Now()
		mustCall[map[string]any](t, relayB, tok["john"], "send_response", map[string]any{"message_id": id, "final_text": "pong"})
		check(umarWaits, sent, "answer")
	})
}

// TestCancelledWaitsLeakNothing starts many waits, cuts them off (clients
// that disconnect), and checks that goroutines and database connections
// return to where they were, and that no connection is in use while they
// wait.
//
// Not parallel: it counts the goroutines of the whole process.
func TestCancelledWaitsLeakNothing(t *testing.T) {
	const waiters = 200
	forEachBackendInTurn(t, func(t *testing.T, s db.Store, app string) {
		u := relayURL(t, s)
		tok := seedUsers(t, s, "acme", "umar", "john")
		// Warm up: one wait starts the notifier's background work.
		waitFor(t, u, tok["john"], 1, "latest")
		waitClient.CloseIdleConnections()
		before := settleGoroutines(0)

		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for range waiters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				callTool(ctx, u, tok["john"], "wait_for_messages", map[string]any{"timeout_seconds": 50, "cursor": "latest"})
			}()
		}
		settled, peak := quietConnections(s, time.Second)
		during := sample(t, s, app)
		t.Logf("%s: %d waits settled into waiting within %v (pool peak %d connections): %s",
			s.Backend(), waiters, settled.Round(time.Millisecond), peak, during)
		if during.inUse != 0 {
			t.Errorf("%d database connections in use while %d waits wait, want 0", during.inUse, waiters)
		}
		cancel()
		wg.Wait()
		waitClient.CloseIdleConnections()
		after := settleGoroutines(before)
		if after > before {
			t.Errorf("goroutines after cancelling %d waits = %d, want at most %d (before them)", waiters, after, before)
		}
		end := sample(t, s, app)
		t.Logf("%s: after cancelling (%d goroutines before): %s", s.Backend(), before, end)
		if end.inUse != 0 {
			t.Errorf("%d database connections in use after the waits ended, want 0", end.inUse)
		}
	})
}

// TestThousandWaiters measures one relay with 1,000 users each waiting:
// memory, goroutines and database connections while they wait, and how long
// a question takes to reach each of them.
//
// Not parallel: the figures are the whole process's.
func TestThousandWaiters(t *testing.T) {
	if testing.Short() {
		t.Skip("measures 1,000 concurrent waits; skipped with -short")
	}
	if raceEnabled() {
		t.Skip("measures 1,000 concurrent waits; the race detector makes the figures meaningless (run without -race)")
	}
	const waiters = 1000
	forEachBackendInTurn(t, func(t *testing.T, s db.Store, app string) {
		backend := s.Backend()
		u := relayURL(t, s)
		ids := make([]string, waiters+1)
		ids[0] = "asker"
		for i := 1; i <= waiters; i++ {
			ids[i] = fmt.Sprintf("user%04d", i)
		}
		tok := seedUsers(t, s, "acme", ids...)
		waitFor(t, u, tok["asker"], 1, "latest") // warm up the notifier
		waitClient.CloseIdleConnections()
		runtime.GC()
		before := sample(t, s, app)

		type done struct {
			user   int
			at     time.Time
			events int
			err    error
		}
		results := make(chan done, waiters)
		for i, id := range ids[1:] {
			go func() {
				res, err := callTool(t.Context(), u, tok[id], "wait_for_messages", map[string]any{"timeout_seconds": 55, "cursor": "latest"})
				var out waitOut
				if err == nil {
					err = json.Unmarshal(res.StructuredContent, &out)
				}
				results <- done{i, time.Now(), len(out.Events), err}
			}()
		}
		settled, peak := quietConnections(s, 2*time.Second)
		runtime.GC()
		waiting := sample(t, s, app)
		t.Logf("%s: before: %s", backend, before)
		t.Logf("%s: %d waiting (settled within %v, pool peak %d connections): %s",
			backend, waiters, settled.Round(time.Millisecond), peak, waiting)
		t.Logf("%s: per waiter, client and server together in this process: %.1f KiB RSS, %.1f KiB Go heap, %.1f goroutines",
			backend, float64(waiting.rssKiB-before.rssKiB)/waiters, float64(waiting.heapKiB-before.heapKiB)/waiters,
			float64(waiting.goroutines-before.goroutines)/waiters)
		if waiting.inUse != 0 {
			t.Errorf("%d database connections in use while %d waits wait, want 0", waiting.inUse, waiters)
		}

		// A question to each: every waiter returns with it.
		sent := time.Now()
		askedAt := make([]time.Time, waiters) // when each question committed (ask_person answered)
		var wg sync.WaitGroup
		next := make(chan int)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					if _, err := callTool(t.Context(), u, tok["asker"], "ask_person", map[string]any{"to_user_id": ids[i+1], "question": "ping"}); err != nil {
						t.Errorf("ask %s: %v", ids[i+1], err)
					}
					askedAt[i] = time.Now()
				}
			}()
		}
		for i := range waiters {
			next <- i
		}
		close(next)
		wg.Wait()
		asked := time.Since(sent)
		latencies := make([]time.Duration, 0, waiters)
		for range waiters {
			d := <-results
			if d.err != nil || d.events != 1 {
				t.Errorf("a waiter returned %d events, %v; want its question", d.events, d.err)
				continue
			}
			latencies = append(latencies, max(0, d.at.Sub(askedAt[d.user])))
		}
		slices.Sort(latencies)
		if len(latencies) > 0 {
			pct := func(p float64) time.Duration {
				return latencies[int(p*float64(len(latencies)-1))].Round(time.Millisecond)
			}
			t.Logf("%s: %d questions asked in %v (8 at a time); waiter returned after its question committed: p50 %v, p99 %v, max %v",
				backend, waiters, asked.Round(time.Millisecond), pct(0.5), pct(0.99), pct(1))
		}
		waitClient.CloseIdleConnections()
		t.Logf("%s: after: %s", backend, sample(t, s, app))
	})
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// forEachBackendInTurn runs fn on a fresh store of each backend, one after
// the other (tests that measure the whole process must run alone). On
// PostgreSQL, app is the application_name that tags the store's connections.
func forEachBackendInTurn(t *testing.T, fn func(t *testing.T, s db.Store, app string)) {
	for _, backend := range dbtest.Backends {
		t.Run(backend, func(t *testing.T) {
			cfg := dbtest.NewConfig(t, backend)
			var app string
			if cfg.DatabaseURL != "" {
				cfg.DatabaseURL, app = tagConnections(t, cfg.DatabaseURL)
			}
			fn(t, dbtest.Open(t, cfg), app)
		})
	}
}

// quietConnections waits until no pooled connection has been in use for
// quiet (at most 30 s) and returns how long the waits took to settle and the
// most connections the pool had open meanwhile.
func quietConnections(s db.Store, quiet time.Duration) (settled time.Duration, peakOpen int) {
	start := time.Now()
	calm := time.Now()
	for time.Since(start) < 30*time.Second {
		open, inUse := s.Connections()
		peakOpen = max(peakOpen, open)
		if inUse > 0 {
			calm = time.Now()
		} else if time.Since(calm) >= quiet {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return calm.Sub(start), peakOpen
}

// usage is one sample of the process and its database connections.
type usage struct {
	rssKiB, heapKiB     int64
	goroutines          int
	open, inUse, server int
}

func (u usage) String() string {
	s := fmt.Sprintf("RSS %.1f MiB, Go heap %.1f MiB, %d goroutines; pool: %d connections open, %d in use",
		float64(u.rssKiB)/1024, float64(u.heapKiB)/1024, u.goroutines, u.open, u.inUse)
	if u.server >= 0 {
		s += fmt.Sprintf("; PostgreSQL sees %d connections", u.server)
	}
	return s
}

func sample(t *testing.T, s db.Store, app string) usage {
	t.Helper()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u := usage{rssKiB: rssKiB(t), heapKiB: int64(ms.HeapInuse / 1024), goroutines: runtime.NumGoroutine(), server: -1}
	u.open, u.inUse = s.Connections()
	if app != "" {
		u.server = pgConnections(t, app)
	}
	return u
}

// rssKiB reads this process's resident set size from /proc/self/status.
func rssKiB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// settleGoroutines waits (up to 5 s) for the goroutine count to fall to
// target, or to stop falling when target is 0, and returns it.
func settleGoroutines(target int) int {
	deadline := time.Now().Add(5 * time.Second)
	n, prev := runtime.NumGoroutine(), -1
	for time.Now().Before(deadline) {
		if (target > 0 && n <= target) || (target == 0 && n == prev) {
			return n
		}
		time.Sleep(100 * time.Millisecond)
		prev, n = n, runtime.NumGoroutine()
	}
	return n
}

// tagConnections gives a PostgreSQL URL's connections a unique
// application_name, so pg_stat_activity can tell them from other tests'.
func tagConnections(t *testing.T, dbURL string) (string, string) {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	app := "ctalk_wait_" + hex.EncodeToString(b[:])
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String(), app
}

// pgConnections counts what PostgreSQL sees of a store: every connection
// with its application_name, the pool's and the LISTEN one.
func pgConnections(t *testing.T, app string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), os.Getenv(dbtest.PostgresURLEnv))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
		t.Fatalf("count connections: %v", err)
	}
	return n
}
