package server_test

// Capacity measurements through the real HTTP front and /mcp, each side by
// side with its baseline in the same run (see BENCHMARKS.md):
//
//   - ask_person through /mcp against a plain net/http handler that does the
//     same insert (allocate a message number, insert the row) on the same
//     database without MCP;
//   - check_inbox with 1M stored messages against 1k stored messages.
//
// Benchmarks (go test -bench) give per-call figures; TestCapacity, which runs
// only with CTALK_CAPACITY=1, alternates short rounds of each pair so that
// other load on the machine hits both sides alike, and prints the ratios.

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/metrics"
	"github.com/ctalk/ctalk/internal/relay"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

// capDB is a fresh, migrated database for a measurement, with direct SQL
// access for bulk loads.
type capDB struct {
	store db.Store
	cfg   db.Config
}

// newCapDB opens a fresh, migrated database of backend.
func newCapDB(tb testing.TB, backend string) *capDB {
	tb.Helper()
	cfg := dbtest.NewConfig(tb, backend)
	return &capDB{store: dbtest.Open(tb, cfg), cfg: cfg}
}

// exec runs SQL on the database directly.
func (d *capDB) exec(tb testing.TB, query string, args ...any) {
	tb.Helper()
	dbtest.Exec(tb, d.cfg, query, args...)
}

// capUser is the id of the ith user of organization acme.
func capUser(i int) string { return fmt.Sprintf("u%02d", i) }

// seedCapTeam stores organization acme with n users and returns a token for
// each, straight through the store: no password hashing in the setup.
func (d *capDB) seedCapTeam(tb testing.TB, n int) (tokens []string) {
	tb.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	err := d.store.InTx(ctx, func(q db.Queries) error {
		if err := q.CreateOrganization(ctx, db.Organization{ID: "acme", Name: "Acme", AdminPasswordHash: "unused", CreatedAt: now}); err != nil {
			return err
		}
		for i := range n {
			u := db.User{OrgID: "acme", ID: capUser(i), Name: "User " + capUser(i), PasswordHash: "unused",
				Ownership: "service-" + capUser(i), Notes: "Ask me about service " + capUser(i), CreatedAt: now}
			if err := q.CreateUser(ctx, u); err != nil {
				return err
			}
			var b [32]byte
			rand.Read(b[:])
			token := "ctalk_" + base64.RawURLEncoding.EncodeToString(b[:])
			sum := sha256.Sum256([]byte(token))
			if err := q.CreateToken(ctx, db.Token{TokenHash: sum[:], OrgID: "acme", UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}); err != nil {
				return err
			}
			tokens = append(tokens, token)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("seed: %v", err)
	}
	return tokens
}

// fillMessages stores total messages in acme (whose 100 users must exist):
// bulk rows spread over the users, 90% answered, none of them unanswered to
// u00; then exactly 25 unanswered questions to u00 through the store. So
// u00's inbox is the same full page whatever total is, and only the volume
// around it changes. The organization's counters stay consistent.
func (d *capDB) fillMessages(tb testing.TB, total int) {
	tb.Helper()
	const inbox = 25
	bulk := total - inbox
	if d.cfg.DatabaseURL != "" {
		d.exec(tb, `INSERT INTO messages (org_id, id, from_user_id, to_user_id, question, asked_at, asked_seq, answer_text, answered_at, answered_seq, thread_id)
			SELECT 'acme', g, 'u' || lpad(((t + 1 + (g / 100) % 99) % 100)::text, 2, '0'), 'u' || lpad(t::text, 2, '0'),
			       'How does service ' || g || ' retry when the queue is full?', now(), g,
			       CASE WHEN g % 10 <> 0 OR t = 0 THEN 'Three attempts with backoff, see runbook ' || g END,
			       CASE WHEN g % 10 <> 0 OR t = 0 THEN now() END,
			       CASE WHEN g % 10 <> 0 OR t = 0 THEN $1 + g END, g
			FROM (SELECT g, g % 100 AS t FROM generate_series(1, $1::bigint) g) s`, bulk)
	} else {
		d.exec(tb, `WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < ?1)
			INSERT INTO messages (org_id, id, from_user_id, to_user_id, question, asked_at, asked_seq, answer_text, answered_at, answered_seq, thread_id)
			SELECT 'acme', g, printf('u%02d', (g % 100 + 1 + (g / 100) % 99) % 100), printf('u%02d', g % 100),
			       'How does service ' || g || ' retry when the queue is full?', '2026-03-01T09:00:00.000000Z', g,
			       CASE WHEN g % 10 <> 0 OR g % 100 = 0 THEN 'Three attempts with backoff, see runbook ' || g END,
			       CASE WHEN g % 10 <> 0 OR g % 100 = 0 THEN '2026-03-01T09:00:01.000000Z' END,
			       CASE WHEN g % 10 <> 0 OR g % 100 = 0 THEN ?1 + g END, g
			FROM s`, bulk)
		// The search index, as the answering trigger would have filled it.
		d.exec(tb, `INSERT INTO messages_search (org_id, message_id)
			SELECT org_id, id FROM messages WHERE org_id = 'acme' AND answered_seq IS NOT NULL ORDER BY answered_seq`)
		// Every bulk answer is private: listed under its asker's and its answerer's groups (migration 00011).
		d.exec(tb, `INSERT OR IGNORE INTO search_groups (org_id, user_id)
			SELECT org_id, from_user_id FROM messages WHERE org_id = 'acme' AND answered_seq IS NOT NULL
			UNION SELECT org_id, to_user_id FROM messages WHERE org_id = 'acme' AND answered_seq IS NOT NULL`)
		d.exec(tb, `INSERT INTO messages_fts (rowid, body)
			SELECT g.id * 1099511627776 + 1099511627775 - s.id, m.question || ' ' || m.answer_text FROM messages_search s
			JOIN messages m ON m.org_id = s.org_id AND m.id = s.message_id
			JOIN search_groups g ON g.org_id = s.org_id AND g.user_id IN (m.from_user_id, m.to_user_id)
			WHERE s.org_id = 'acme' ORDER BY 1`)
	}
	d.exec(tb, "UPDATE organizations SET last_message_id = "+strconv.Itoa(bulk)+", last_event_seq = "+strconv.Itoa(2*bulk)+" WHERE id = 'acme'")
	if d.cfg.DatabaseURL != "" {
		// The search index, as the answering trigger would have filled it.
		d.exec(tb, `INSERT INTO messages_search (org_id, message_id, answered_seq, from_user_id, to_user_id, shared, body)
			SELECT org_id, id, answered_seq, from_user_id, to_user_id, shared_at IS NOT NULL,
			       strip(to_tsvector('english'::regconfig, question || ' ' || answer_text))
			FROM messages WHERE org_id = 'acme' AND answered_seq IS NOT NULL`)
		d.exec(tb, "ANALYZE") // what autovacuum does after a bulk load
	}
	ctx := context.Background()
	err := d.store.InTx(ctx, func(q db.Queries) error {
		for i := range inbox {
			id, seq, err := q.AllocateMessage(ctx, "acme")
			if err != nil {
				return err
			}
			if err := q.CreateMessage(ctx, db.Message{OrgID: "acme", ID: id, FromUserID: capUser(1 + i%99), ToUserID: capUser(0),
				Question: "What is the timeout of service " + strconv.Itoa(i) + "?", AskedAt: time.Now().UTC().Truncate(time.Microsecond), AskedSeq: seq}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("fill inbox: %v", err)
	}
}

// relay serves ctalk over the store until the test ends and returns its /mcp URL.
func (d *capDB) relay(tb testing.TB) string {
	ts := httptest.NewServer(server.Handler(server.Config{Store: d.store, MCP: mcp.NewServer(d.store, mcp.Options{})}))
	tb.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// relayWithMetrics is relay with metrics recorded, as ctalk serve wires
// them: one Metrics for the rules, the tools and the HTTP front.
func (d *capDB) relayWithMetrics(tb testing.TB) string {
	m := metrics.New("bench")
	rules := relay.New(d.store, relay.Options{Metrics: m})
	ts := httptest.NewServer(server.Handler(server.Config{Store: d.store, Relay: rules, Metrics: m,
		MCP: mcp.NewServer(nil, mcp.Options{Relay: rules, Metrics: m})}))
	tb.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// baseline serves ask_person's insert without MCP: decode a JSON body,
// allocate the message number and insert the row in one transaction, answer
// JSON. It is what ctalk would be with no protocol, no token check and no
// validation: the floor ask_person is measured against.
func (d *capDB) baseline(tb testing.TB) string {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			From, To, Question string
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ctx := r.Context()
		var id int64
		err := d.store.InTx(ctx, func(q db.Queries) error {
			var seq int64
			var err error
			if id, seq, err = q.AllocateMessage(ctx, "acme"); err != nil {
				return err
			}
			return q.CreateMessage(ctx, db.Message{OrgID: "acme", ID: id, FromUserID: in.From, ToUserID: in.To,
				Question: in.Question, AskedAt: time.Now().UTC().Truncate(time.Microsecond), AskedSeq: seq})
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"message_id": id})
	})
	ts := httptest.NewServer(h)
	tb.Cleanup(ts.Close)
	return ts.URL
}

// capClient is the HTTP client of every measurement: one connection per worker, kept alive.
var capClient = &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}

// rpcSession is a lean MCP client (2025-11-25, with a session): a tool call
// is one POST, so the client costs both sides of a comparison the same.
type rpcSession struct {
	url, bearer, session string
	ids                  atomic.Int64
}

func newRPCSession(tb testing.TB, mcpURL, bearer string) *rpcSession {
	tb.Helper()
	s := &rpcSession{url: mcpURL, bearer: bearer}
	if _, err := s.post(context.Background(), "initialize", map[string]any{"protocolVersion": "2025-11-25",
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "capacity", "version": "1"}}); err != nil {
		tb.Fatalf("initialize: %v", err)
	}
	if _, err := s.post(context.Background(), "notifications/initialized", nil); err != nil {
		tb.Fatalf("initialized: %v", err)
	}
	return s
}

// post sends one JSON-RPC message and returns the result (nil for a notification).
func (s *rpcSession) post(ctx context.Context, method string, params any) (json.RawMessage, error) {
	msg := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		msg["params"] = params
	}
	if !strings.HasPrefix(method, "notifications/") {
		msg["id"] = s.ids.Add(1)
	}
	body, _ := json.Marshal(msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	if s.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+s.bearer)
	}
	resp, err := capClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s: HTTP %d %s", method, resp.StatusCode, buf.String())
	}
	if method == "initialize" {
		s.session = resp.Header.Get("Mcp-Session-Id")
	}
	if msg["id"] == nil {
		return nil, nil
	}
	data := buf.Bytes()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var last []byte
		for _, line := range bytes.Split(data, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				last = d
			}
		}
		data = last
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", method, err, data)
	}
	if r.Error != nil {
		return nil, errors.New(r.Error.Message)
	}
	return r.Result, nil
}

// call runs a tool; a tool error is an error.
func (s *rpcSession) call(ctx context.Context, tool string, args map[string]any) error {
	res, err := s.post(ctx, "tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return err
	}
	var r struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return err
	}
	if r.IsError {
		return fmt.Errorf("%s: %v", tool, r.Content)
	}
	return nil
}

// postJSON is the baseline's client: one POST of a JSON body.
func postJSON(ctx context.Context, url string, body any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := capClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out struct {
		MessageID int64 `json:"message_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || out.MessageID == 0 {
		return fmt.Errorf("baseline: HTTP %d, %v", resp.StatusCode, err)
	}
	return nil
}

// loadResult is one timed round.
type loadResult struct {
	calls, errors int
	elapsed       time.Duration
	cpu           time.Duration // this process's user+system CPU time (clients included)
	latencies     []time.Duration
	firstErr      error
}

// cpuPerCall is the process's CPU time per call: unlike calls/s, it hardly
// moves with other load on the machine.
func (r loadResult) cpuPerCall() time.Duration { return r.cpu / time.Duration(max(r.calls, 1)) }

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (r loadResult) perSecond() float64 { return float64(r.calls) / r.elapsed.Seconds() }

// percentile of sorted latencies.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// load runs fn on workers goroutines for d and times every call.
func load(workers int, d time.Duration, fn func(ctx context.Context, w, i int) error) loadResult {
	ctx := context.Background()
	var mu sync.Mutex
	var res loadResult
	deadline := time.Now().Add(d)
	start, cpu := time.Now(), processCPU()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			errs := 0
			var first error
			for i := 0; time.Now().Before(deadline); i++ {
				t0 := time.Now()
				err := fn(ctx, w, i)
				lat = append(lat, time.Since(t0))
				if err != nil {
					errs++
					first = cmpOr(first, err)
				}
			}
			mu.Lock()
			res.latencies = append(res.latencies, lat...)
			res.calls += len(lat)
			res.errors += errs
			res.firstErr = cmpOr(res.firstErr, first)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed, res.cpu = time.Since(start), processCPU()-cpu
	slices.Sort(res.latencies)
	return res
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// askLoad drives ask_person through /mcp, or the baseline's insert, with one
// user per worker asking the next.
type askLoad struct {
	sessions []*rpcSession
	baseURL  string
}

func newAskLoad(tb testing.TB, d *capDB, workers int) *askLoad {
	tokens := d.seedCapTeam(tb, max(workers, 2))
	mcpURL := d.relay(tb)
	a := &askLoad{baseURL: d.baseline(tb)}
	for w := range workers {
		a.sessions = append(a.sessions, newRPCSession(tb, mcpURL, tokens[w]))
	}
	return a
}

func (a *askLoad) viaMCP(ctx context.Context, w, i int) error {
	return a.sessions[w].call(ctx, "ask_person", map[string]any{"to_user_id": capUser((w + 1) % max(len(a.sessions), 2)),
		"question": "How does the payment service retry? #" + strconv.Itoa(i)})
}

func (a *askLoad) viaBaseline(ctx context.Context, w, i int) error {
	return postJSON(ctx, a.baseURL, map[string]string{"From": capUser(w), "To": capUser((w + 1) % max(len(a.sessions), 2)),
		"Question": "How does the payment service retry? #" + strconv.Itoa(i)})
}

// BenchmarkAskPersonHTTP compares ask_person through /mcp with the baseline
// handler, 16 concurrent clients (8 per CPU on this 2-core machine).
func BenchmarkAskPersonHTTP(b *testing.B) {
	for _, backend := range dbtest.Backends {
		for _, side := range []string{"mcp", "baseline"} {
			b.Run(backend+"/"+side, func(b *testing.B) {
				a := newAskLoad(b, newCapDB(b, backend), 16)
				fn := a.viaMCP
				if side == "baseline" {
					fn = a.viaBaseline
				}
				var next atomic.Int64
				b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					w := int(next.Add(1)-1) % 16
					for i := 0; pb.Next(); i++ {
						if err := fn(context.Background(), w, i); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		}
	}
}

// BenchmarkCheckInboxHTTP reads a full inbox page through /mcp with n
// messages stored in the organization.
func BenchmarkCheckInboxHTTP(b *testing.B) {
	for _, backend := range dbtest.Backends {
		for _, n := range []int{1_000, 100_000} {
			b.Run(fmt.Sprintf("%s/stored=%d", backend, n), func(b *testing.B) {
				d := newCapDB(b, backend)
				tokens := d.seedCapTeam(b, 100)
				d.fillMessages(b, n)
				s := newRPCSession(b, d.relay(b), tokens[0])
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := s.call(context.Background(), "check_inbox", map[string]any{}); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		}
	}
}

// TestCapacity measures the targets of BENCHMARKS.md side by side with their
// baselines, alternating short rounds. It asserts nothing about speed (other
// work on the machine would make that flaky); it prints the figures.
//
//	CTALK_CAPACITY=1 go test -run TestCapacity -v -timeout 60m ./server
//
// CTALK_CAPACITY_ROUNDS (default 5), CTALK_CAPACITY_ROUND (default 3s) and
// CTALK_CAPACITY_MESSAGES (default 1000000) tune it; CTALK_CAPACITY_ONLY=ask
// or inbox runs one of the two measurements, and =metrics (run only when
// named) compares ask_person through /mcp with metrics on and off.
func TestCapacity(t *testing.T) {
	if os.Getenv("CTALK_CAPACITY") == "" {
		t.Skip("a measurement of several minutes, not a check: set CTALK_CAPACITY=1 to run it (see BENCHMARKS.md)")
	}
	rounds, _ := strconv.Atoi(cmp.Or(os.Getenv("CTALK_CAPACITY_ROUNDS"), "5"))
	round, _ := time.ParseDuration(cmp.Or(os.Getenv("CTALK_CAPACITY_ROUND"), "3s"))
	total, _ := strconv.Atoi(cmp.Or(os.Getenv("CTALK_CAPACITY_MESSAGES"), "1000000"))
	for _, backend := range dbtest.Backends {
		t.Run(backend, func(t *testing.T) {
			only := os.Getenv("CTALK_CAPACITY_ONLY")
			if only == "" || only == "ask" {
				capacityAsk(t, backend, rounds, round)
			}
			if only == "" || only == "inbox" {
				capacityInbox(t, backend, rounds, round, total)
			}
			if only == "metrics" {
				capacityMetrics(t, backend, rounds, round)
			}
		})
	}
}

// side is one side of a comparison over several rounds.
type side struct {
	name   string
	fn     func(ctx context.Context, w, i int) error
	rounds []loadResult
}

// alternate runs rounds of a and b in turn (a b, b a, a b, …) after a warm-up.
func alternate(t *testing.T, workers, rounds int, round time.Duration, a, b *side) {
	t.Helper()
	load(workers, round/3, a.fn)
	load(workers, round/3, b.fn)
	for r := range rounds {
		first, second := a, b
		if r%2 == 1 {
			first, second = b, a
		}
		for _, s := range []*side{first, second} {
			res := load(workers, round, s.fn)
			if res.errors > 0 {
				t.Fatalf("%s: %d of %d calls failed; first: %v", s.name, res.errors, res.calls, res.firstErr)
			}
			s.rounds = append(s.rounds, res)
			t.Logf("round %d %-14s %6d calls  %7.1f/s  p50 %6.2fms  p99 %6.2fms  cpu %4dµs/call", r+1, s.name, res.calls, res.perSecond(),
				ms(percentile(res.latencies, 0.50)), ms(percentile(res.latencies, 0.99)), res.cpuPerCall().Microseconds())
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// each maps the rounds of a side to a figure.
func (s *side) each(f func(loadResult) float64) []float64 {
	var out []float64
	for _, r := range s.rounds {
		out = append(out, f(r))
	}
	return out
}

func (s *side) all() []time.Duration {
	var lat []time.Duration
	for _, r := range s.rounds {
		lat = append(lat, r.latencies...)
	}
	slices.Sort(lat)
	return lat
}

func capacityAsk(t *testing.T, backend string, rounds int, round time.Duration) {
	const workers = 16
	a := newAskLoad(t, newCapDB(t, backend), workers)
	viaMCP, base := &side{name: "mcp", fn: a.viaMCP}, &side{name: "baseline", fn: a.viaBaseline}
	alternate(t, workers, rounds, round, base, viaMCP)
	perSecond := func(r loadResult) float64 { return r.perSecond() }
	var ratios []float64
	for i := range viaMCP.rounds {
		ratios = append(ratios, viaMCP.rounds[i].perSecond()/base.rounds[i].perSecond())
	}
	cpu := func(r loadResult) float64 { return float64(r.cpuPerCall().Microseconds()) }
	bm, mm := median(base.each(perSecond)), median(viaMCP.each(perSecond))
	t.Logf("RESULT %s ask_person at concurrency %d: baseline %.0f/s (p99 %.1fms, %.0fµs CPU/call), /mcp %.0f/s (p99 %.1fms, %.0fµs CPU/call): "+
		"ratio of medians %.2f, median of round ratios %.2f (target >= %.2f)",
		backend, workers, bm, ms(percentile(base.all(), 0.99)), median(base.each(cpu)),
		mm, ms(percentile(viaMCP.all(), 0.99)), median(viaMCP.each(cpu)), mm/bm, median(ratios), askTarget[backend])
}

// capacityMetrics compares ask_person through /mcp with and without the
// metrics recorded, on the same database and the same team.
func capacityMetrics(t *testing.T, backend string, rounds int, round time.Duration) {
	const workers = 16
	d := newCapDB(t, backend)
	tokens := d.seedCapTeam(t, workers)
	sides := map[bool]*side{}
	for _, on := range []bool{false, true} {
		url, name := d.relay(t), "metrics off"
		if on {
			url, name = d.relayWithMetrics(t), "metrics on"
		}
		var sessions []*rpcSession
		for w := range workers {
			sessions = append(sessions, newRPCSession(t, url, tokens[w]))
		}
		sides[on] = &side{name: name, fn: func(ctx context.Context, w, i int) error {
			return sessions[w].call(ctx, "ask_person", map[string]any{"to_user_id": capUser((w + 1) % workers),
				"question": "How does the payment service retry? #" + strconv.Itoa(i)})
		}}
	}
	off, on := sides[false], sides[true]
	alternate(t, workers, rounds, round, off, on)
	perSecond := func(r loadResult) float64 { return r.perSecond() }
	cpu := func(r loadResult) float64 { return float64(r.cpuPerCall().Microseconds()) }
	var ratios []float64
	for i := range on.rounds {
		ratios = append(ratios, on.rounds[i].perSecond()/off.rounds[i].perSecond())
	}
	t.Logf("RESULT %s ask_person at concurrency %d: metrics off %.0f/s (%.0fµs CPU/call), on %.0f/s (%.0fµs CPU/call): "+
		"ratio of medians %.3f, median of round ratios %.3f", backend, workers,
		median(off.each(perSecond)), median(off.each(cpu)), median(on.each(perSecond)), median(on.each(cpu)),
		median(on.each(perSecond))/median(off.each(perSecond)), median(ratios))
}

// askTarget is the ratio ask_person through /mcp should reach against the
// baseline on each backend (the design issue's figures).
var askTarget = map[string]float64{"sqlite": 0.80, "postgres": 0.85}

func capacityInbox(t *testing.T, backend string, rounds int, round time.Duration, total int) {
	const workers = 8
	sides := map[int]*side{}
	for _, n := range []int{1000, total} {
		d := newCapDB(t, backend)
		tokens := d.seedCapTeam(t, 100)
		start := time.Now()
		d.fillMessages(t, n)
		t.Logf("%s: stored %d messages in %s", backend, n, time.Since(start).Round(time.Second))
		mcpURL := d.relay(t)
		var sessions []*rpcSession
		for range workers {
			sessions = append(sessions, newRPCSession(t, mcpURL, tokens[0]))
		}
		sides[n] = &side{name: "stored=" + strconv.Itoa(n), fn: func(ctx context.Context, w, i int) error {
			return sessions[w].call(ctx, "check_inbox", map[string]any{})
		}}
	}
	small, big := sides[1000], sides[total]
	alternate(t, workers, rounds, round, small, big)
	p99 := func(r loadResult) float64 { return ms(percentile(r.latencies, 0.99)) }
	var ratios []float64
	for i := range big.rounds {
		ratios = append(ratios, p99(big.rounds[i])/p99(small.rounds[i]))
	}
	sl, bl := small.all(), big.all()
	t.Logf("RESULT %s check_inbox at concurrency %d: 1k stored p50 %.2fms p99 %.2fms; %d stored p50 %.2fms p99 %.2fms: "+
		"p99 ratio %.2f over all calls, median of round ratios %.2f (target <= 2.00)",
		backend, workers, ms(percentile(sl, 0.5)), ms(percentile(sl, 0.99)), total, ms(percentile(bl, 0.5)), ms(percentile(bl, 0.99)),
		ms(percentile(bl, 0.99))/ms(percentile(sl, 0.99)), median(ratios))
}
