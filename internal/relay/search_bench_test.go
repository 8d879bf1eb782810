package relay

// search_answers at scale (issue 14): its latency with 1k and with 1M
// answered messages in the caller's organization, on both backends,
// through Service.SearchAnswers over a real store. The bar is p99 at 1M ≤
// 3× p99 at 1k. The 1k size always runs; the 1M size only when
// CTALK_BENCH_SEARCH_1M is set (loading it takes minutes), and then the
// query plans of the search's statements at 1M are logged too. With
// CTALK_BENCH_SEARCH_KEEP=dir the 1M databases are kept and used again
// (migrated on open), so that a change can be measured in seconds. Run
// with:
//
//	CTALK_BENCH_SEARCH_1M=1 go test -run '^$' -bench SearchAnswers -benchtime 1000x -timeout 1h -v ./internal/relay

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// searchBench1MEnv turns on the 1M-message size.
const searchBench1MEnv = "CTALK_BENCH_SEARCH_1M"

// searchBenchHeadEnv sets the Zipf–Mandelbrot offset of the text's words
// (searchHeadOffset): 1 gives the most common word one token in nine and
// puts it in nearly every answer.
const searchBenchHeadEnv = "CTALK_BENCH_SEARCH_HEAD"

// searchBenchKeepEnv names a directory where the 1M databases are kept
// between runs: a SQLite file there, and a PostgreSQL schema named after
// it. A run finds them loaded (and migrated by Open, as a deploy would)
// and skips the load. Delete the file, or drop the schema, to load again.
const searchBenchKeepEnv = "CTALK_BENCH_SEARCH_KEEP"

// searchHeadOffset flattens the head of the text's Zipf distribution
// (P(rank k) ∝ (k+offset)^-1.05): in real text the head is stop words
// ("the", "we", "how", which the tokenizers drop), and the most common
// word that is left is about 1 token in 300 and in one answer in ten.
const searchHeadOffset = 50

const (
	searchBenchUsers  = 20 // askers and answerers; u0 searches
	searchBenchShared = 30 // percent of answers shared with the organization
	searchBenchTail   = 30_000
)

// searchHead is the vocabulary people of a software team use most, most
// frequent first (none is a stop word). Beyond it the vocabulary has a long
// tail of made-up names (services, libraries, tickets), so that query words
// range from a word in nearly every answer to one in a few hundred of a
// million.
var searchHead = strings.Fields(`
	deploy service test build error config database retry timeout request
	release branch query cache token user payment queue worker migration
	index schema server client endpoint log metric alert staging production
	docker image cluster node pod secret key certificate proxy gateway
	handler middleware session cookie login password account invoice refund
	customer order cart checkout price discount tax currency webhook event
	stream batch job cron schedule backup restore replica failover latency
	throughput memory cpu disk network dns load balancer limit quota
	throttle backoff idempotency transaction lock deadlock connection pool
	thread goroutine channel mutex context cancel shutdown signal health
	probe readiness liveness rollout rollback canary feature flag experiment
	dashboard graph trace span profile benchmark flaky fixture mock
	integration unit coverage lint format review merge rebase commit tag
	version dependency upgrade vulnerability patch hotfix incident outage
	postmortem oncall pager runbook ticket sprint estimate roadmap spec
	design document api grpc rest graphql json yaml protobuf serializer
	parser validator encoder decoder compression encryption hash signature
	oauth saml permission role admin audit compliance retention archive
	export import upload download bucket storage object file folder path
	url domain subdomain tls http header body payload response status
	code redirect cors csrf xss injection sanitizer escape template render
	frontend backend mobile android ios browser react typescript golang
	python java kotlin rust terraform ansible helm kubernetes postgres
	sqlite redis kafka rabbitmq elasticsearch prometheus grafana sentry
	datadog jenkins github gitlab pipeline artifact registry container
	volume mount permissionset tenant organization team member invite
	notification email sms push template locale translation timezone
	calendar report analytics warehouse etl snapshot partition shard
	vacuum autovacuum bloat reindex sequence trigger constraint foreign
	primary column table view function procedure cursor pagination sort
	filter search ranking relevance stemmer tokenizer synonym spelling`)

// searchVocab is the whole vocabulary, most frequent first: the head, then
// made-up words of four syllables.
func searchVocab() []string {
	syl := strings.Fields("ba ko ri mu te sa lo vi ne du ga pe zo hi fa ju")
	vocab := slices.Clone(searchHead)
	for i := range searchBenchTail {
		var w strings.Builder
		for d := i + 4096; d > 0; d /= 16 { // four or five syllables
			w.WriteString(syl[d%16])
		}
		vocab = append(vocab, w.String())
	}
	return vocab
}

// searchMsg is one answered message of the bench organization.
type searchMsg struct {
	id                int64
	from, to          string
	question, answer  string
	askedAt, answered time.Time
	shared            bool
}

// searchMessages yields n answered messages, always the same ones: askers
// and answerers among searchBenchUsers people, words drawn from the
// vocabulary with a Zipf–Mandelbrot distribution, 30% shared.
func searchMessages(n int, vocab []string, yield func(searchMsg) error) error {
	r := rand.New(rand.NewPCG(14, 1))
	offset := float64(searchHeadOffset)
	if v, err := strconv.ParseFloat(os.Getenv(searchBenchHeadEnv), 64); err == nil && v >= 1 {
		offset = v
	}
	zipf := rand.NewZipf(r, 1.05, offset, uint64(len(vocab)-1))
	words := func(lo, hi int) string {
		ws := make([]string, lo+r.IntN(hi-lo+1))
		for i := range ws {
			ws[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(ws, " ")
	}
	base := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	for i := 1; i <= n; i++ {
		from := r.IntN(searchBenchUsers)
		to := (from + 1 + r.IntN(searchBenchUsers-1)) % searchBenchUsers
		at := base.Add(time.Duration(i) * time.Second)
		m := searchMsg{
			id: int64(i), from: "u" + strconv.Itoa(from), to: "u" + strconv.Itoa(to),
			question: "How do we handle the " + words(3, 8) + "?",
			answer:   "We " + words(6, 20) + ". Then the " + words(6, 20) + ".",
			askedAt:  at, answered: at.Add(500 * time.Millisecond), shared: r.IntN(100) < searchBenchShared,
		}
		if err := yield(m); err != nil {
			return err
		}
	}
	return nil
}

// searchQuery is a search a person would type, and whether all its words
// are from the common head of the vocabulary.
type searchQuery struct {
	text   string
	common bool
}

// searchMix is a fixed mix of 1–3 word searches: each word from the head
// (Zipf, as people talk) or the tail (uniform: a name someone looks up).
func searchMix(vocab []string) []searchQuery {
	r := rand.New(rand.NewPCG(14, 2))
	zipf := rand.NewZipf(r, 1.05, 1, uint64(len(searchHead)-1))
	mix := make([]searchQuery, 100)
	for i := range mix {
		ws := make([]string, 1+r.IntN(3))
		q := searchQuery{common: true}
		for j := range ws {
			if r.IntN(2) == 0 {
				ws[j] = vocab[zipf.Uint64()]
			} else {
				ws[j], q.common = vocab[len(searchHead)+r.IntN(searchBenchTail)], false
			}
		}
		q.text = strings.Join(ws, " ")
		mix[i] = q
	}
	return mix
}

// loadSearchMessages stores n answered messages in organization acme (made
// by benchTeam) in bulk, with their FTS5 rows on SQLite, keeping the
// organization's counters consistent; the indexes on messages are dropped
// for the load and built again from their own definitions; PostgreSQL
// then gets VACUUM ANALYZE, as autovacuum would.
func loadSearchMessages(b *testing.B, cfg db.Config, n int) {
	b.Helper()
	start := time.Now()
	vocab := searchVocab()
	ctx := context.Background()
	if cfg.DatabaseURL != "" {
		conn, err := pgx.Connect(ctx, cfg.DatabaseURL)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, _ := conn.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes
			WHERE schemaname = current_schema() AND tablename = 'messages' AND indexname <> 'messages_pkey'`)
		names, defs := indexDefs(b, rows)
		pgExec := func(q string) {
			if _, err := conn.Exec(ctx, q); err != nil {
				b.Fatalf("%.100s: %v", q, err)
			}
		}
		for _, name := range names {
			pgExec("DROP INDEX " + pgx.Identifier{name}.Sanitize())
		}
		msgs := make(chan searchMsg, 1024)
		done := make(chan error, 1)
		go func() {
			done <- searchMessages(n, vocab, func(m searchMsg) error { msgs <- m; return nil })
			close(msgs)
		}()
		_, err = conn.CopyFrom(ctx, pgx.Identifier{"messages"},
			[]string{"org_id", "id", "from_user_id", "to_user_id", "question", "asked_at", "asked_seq",
				"answer_text", "answered_at", "answered_seq", "thread_id", "shared_at"},
			pgx.CopyFromFunc(func() ([]any, error) {
				m, ok := <-msgs
				if !ok {
					return nil, nil
				}
				var shared *time.Time
				if m.shared {
					shared = &m.answered
				}
				return []any{"acme", m.id, m.from, m.to, m.question, m.askedAt, 2*m.id - 1,
					m.answer, m.answered, 2 * m.id, m.id, shared}, nil
			}))
		if err != nil {
			b.Fatalf("copy messages: %v", err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		pgExec("SET maintenance_work_mem = '256MB'")
		for _, def := range defs {
			pgExec(def)
		}
		// What the trigger adds when a question is answered, as the
		// migration fills it.
		pgExec(`INSERT INTO messages_search (org_id, message_id, answered_seq, from_user_id, to_user_id, shared, body)
			SELECT org_id, id, answered_seq, from_user_id, to_user_id, shared_at IS NOT NULL,
			       strip(to_tsvector('english'::regconfig, question || ' ' || answer_text))
			FROM messages WHERE org_id = 'acme' AND answered_seq IS NOT NULL ORDER BY answered_seq`)
		pgExec(fmt.Sprintf("UPDATE organizations SET last_message_id = %d, last_event_seq = %d WHERE id = 'acme'", n, 2*n))
		pgExec("VACUUM ANALYZE messages")
		pgExec("VACUUM ANALYZE messages_search")
	} else {
		conn, err := sql.Open("sqlite3", "file:"+cfg.SQLitePath+"?_pragma=busy_timeout(10000)")
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		conn.SetMaxOpenConns(1)
		rows, err := conn.Query(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages' AND sql IS NOT NULL`)
		if err != nil {
			b.Fatal(err)
		}
		names, defs := indexDefs(b, rows)
		rows.Close()
		exec := func(q string, args ...any) {
			if _, err := conn.Exec(q, args...); err != nil {
				b.Fatalf("%.100s: %v", q, err)
			}
		}
		for _, name := range names {
			exec(`DROP INDEX "` + name + `"`)
		}
		tx, err := conn.Begin()
		if err != nil {
			b.Fatal(err)
		}
		ins, err := tx.Prepare(`INSERT INTO messages (org_id, id, from_user_id, to_user_id, question, asked_at, asked_seq,
			answer_text, answered_at, answered_seq, thread_id, shared_at) VALUES ('acme', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			b.Fatal(err)
		}
		// The search index as the answering trigger fills it: a stable key per
		// answered question (in answer order, here the id order), then its words
		// under each of its readers' groups: the organization's for a shared
		// answer, the asker's and the answerer's for a private one.
		key, err := tx.Prepare(`INSERT INTO messages_search (id, org_id, message_id) VALUES (?, 'acme', ?)`)
		if err != nil {
			b.Fatal(err)
		}
		for i := range searchBenchUsers + 1 {
			user := ""
			if i > 0 {
				user = "u" + strconv.Itoa(i-1)
			}
			if _, err := tx.Exec(`INSERT OR IGNORE INTO search_groups (org_id, user_id) VALUES ('acme', ?)`, user); err != nil {
				b.Fatal(err)
			}
		}
		const f = "2006-01-02T15:04:05.000000Z07:00" // as db stores times
		err = searchMessages(n, vocab, func(m searchMsg) error {
			var shared any
			if m.shared {
				shared = m.answered.Format(f)
			}
			if _, err := ins.Exec(m.id, m.from, m.to, m.question, m.askedAt.Format(f), 2*m.id-1,
				m.answer, m.answered.Format(f), 2*m.id, m.id, shared); err != nil {
				return err
			}
			_, err := key.Exec(m.id, m.id)
			return err
		})
		if err != nil {
			b.Fatalf("insert messages: %v", err)
		}
		// The words as the migration fills the index: in rowid order, each
		// group's rows together. (Rows out of rowid order make FTS5 flush a
		// segment at each one: a million one-row segments.)
		if _, err := tx.Exec(`INSERT INTO messages_fts (rowid, body)
			SELECT g.id * 1099511627776 + 1099511627775 - s.id, m.question || ' ' || m.answer_text
			FROM messages_search s
			JOIN messages m ON m.org_id = s.org_id AND m.id = s.message_id
			JOIN search_groups g ON g.org_id = s.org_id
			 AND g.user_id IN (CASE WHEN m.shared_at IS NULL THEN m.from_user_id ELSE '' END,
			                   CASE WHEN m.shared_at IS NULL THEN m.to_user_id ELSE '' END)
			ORDER BY 1`); err != nil {
			b.Fatalf("index messages: %v", err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		for _, def := range defs {
			exec(def)
		}
		exec("UPDATE organizations SET last_message_id = ?, last_event_seq = ? WHERE id = 'acme'", n, 2*n)
		// No ANALYZE: production SQLite databases have no statistics (see
		// db/plan_test.go), and with them SQLite prepares a search again
		// for its bound values each time.
		exec("PRAGMA wal_checkpoint(TRUNCATE)")
	}
	b.Logf("loaded %d messages in %s", n, time.Since(start).Round(time.Second))
}

// indexDefs reads (name, definition) rows of either driver: the indexes
// the load drops and builds again.
func indexDefs(b *testing.B, rows interface {
	Next() bool
	Scan(...any) error
	Err() error
}) (names, defs []string) {
	b.Helper()
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			b.Fatal(err)
		}
		names, defs = append(names, name), append(defs, def)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return names, defs
}

// searchSize is one database of the benchmark and the latencies of the
// searches on it, by query class.
type searchSize struct {
	name              string
	svc               *Service
	cred              Credentials
	all, common, rare []time.Duration
	byQuery           map[string][]time.Duration
}

// search runs q through SearchAnswers for u0 and records how long it took.
func (z *searchSize) search(b *testing.B, q searchQuery) {
	start := time.Now()
	if _, err := z.svc.SearchAnswers(context.Background(), z.cred, q.text); err != nil {
		b.Fatalf("SearchAnswers(%q): %v", q.text, err)
	}
	d := time.Since(start)
	z.all = append(z.all, d)
	if z.byQuery == nil {
		z.byQuery = map[string][]time.Duration{}
	}
	z.byQuery[q.text] = append(z.byQuery[q.text], d)
	if q.common {
		z.common = append(z.common, d)
	} else {
		z.rare = append(z.rare, d)
	}
}

// BenchmarkSearchAnswers runs the fixed query mix through SearchAnswers
// for u0, one call at a time, on a database of each size; the sizes take
// turns query by query, so load from outside hits them alike. It reports
// p50 and p99 in milliseconds per size (p99 also for the all-common and
// the with-a-rare-word queries), and the ratio of each p99 at 1M to 1k.
func BenchmarkSearchAnswers(b *testing.B) {
	sizes := []int{1_000}
	if os.Getenv(searchBench1MEnv) != "" {
		sizes = append(sizes, 1_000_000)
	}
	vocab := searchVocab()
	mix := searchMix(vocab)
	for _, backend := range dbtest.Backends {
		b.Run(backend, func(b *testing.B) {
			var zs []*searchSize
			for _, n := range sizes {
				cfg, kept := searchBenchConfig(b, backend, n)
				s := dbtest.Open(b, cfg)
				var tokens []string
				if kept {
					if cfg.DatabaseURL != "" { // after a migration, as autovacuum would
						dbtest.PGExec(b, cfg.DatabaseURL, "VACUUM ANALYZE messages_search")
					}
					tokens = []string{benchToken(b, s, "u0")}
					b.Logf("kept %d messages: %s", n, cfg.SQLitePath+cfg.DatabaseURL)
				} else {
					tokens = benchTeam(b, s, searchBenchUsers)
					loadSearchMessages(b, cfg, n)
				}
				start := time.Now()
				if err := db.ListForSearch(b.Context(), s); err != nil {
					b.Fatal(err)
				}
				b.Logf("listed %d messages for search in %s", n, time.Since(start).Round(time.Millisecond))
				if n == sizes[len(sizes)-1] {
					logSearchPlans(b, cfg, s, vocab)
				}
				z := &searchSize{name: map[int]string{1_000: "1k", 1_000_000: "1M"}[n], svc: New(s, Options{}),
					cred: Credentials{Token: tokens[0]}}
				if res, err := z.svc.SearchAnswers(context.Background(), z.cred, searchHead[0]); err != nil || len(res.Results) != searchPage {
					b.Fatalf("SearchAnswers(%q) = %d results, %v; want a full page", searchHead[0], len(res.Results), err)
				}
				zs = append(zs, z)
			}
			for _, z := range zs { // warm the caches, then forget
				for _, q := range mix {
					z.search(b, q)
				}
				z.all, z.common, z.rare, z.byQuery = nil, nil, nil, nil
			}
			i := 0
			for b.Loop() {
				q := mix[i%len(mix)]
				for j := range zs {
					zs[(i+j)%len(zs)].search(b, q)
				}
				i++
			}
			for _, z := range zs {
				b.ReportMetric(pct(z.all, 50), z.name+"-p50-ms")
				b.ReportMetric(pct(z.all, 99), z.name+"-p99-ms")
				b.ReportMetric(pct(z.common, 99), z.name+"-p99-common-ms")
				b.ReportMetric(pct(z.rare, 99), z.name+"-p99-rare-ms")
			}
			for _, z := range zs {
				logSlowest(b, z)
			}
			if len(zs) == 2 {
				small, big := zs[0], zs[1]
				b.ReportMetric(pct(big.all, 99)/pct(small.all, 99), "p99-ratio")
				b.ReportMetric(pct(big.common, 99)/pct(small.common, 99), "p99-common-ratio")
				b.ReportMetric(pct(big.rare, 99)/pct(small.rare, 99), "p99-rare-ratio")
			}
		})
	}
}

// logSlowest logs the queries with the slowest median at z, with their
// median at each size.
func logSlowest(b *testing.B, z *searchSize) {
	type slow struct {
		q   string
		p50 float64
	}
	var qs []slow
	for q, ds := range z.byQuery {
		qs = append(qs, slow{q, pct(ds, 50)})
	}
	slices.SortFunc(qs, func(a, b slow) int { return cmp.Compare(b.p50, a.p50) })
	var lines []string
	for _, s := range qs[:min(len(qs), 8)] {
		lines = append(lines, fmt.Sprintf("%7.2f ms  %q", s.p50, s.q))
	}
	b.Logf("slowest searches at %s (median):\n%s", z.name, strings.Join(lines, "\n"))
}

// pct is the p-th percentile of ds in milliseconds (0 for none).
func pct(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[min(len(s)-1, len(s)*p/100)]) / float64(time.Millisecond)
}

// logSearchPlans logs the plans of the search queries, exactly as sqlc
// generated them, for u0 and the most common word, a word of about one in
// a hundred, and a rare one. PostgreSQL: EXPLAIN ANALYZE of SearchMessages.
// SQLite: EXPLAIN QUERY PLAN of a group's matches (SearchGroupKeys) and of
// reading the page (SearchFetch), and the time the store's whole search
// took.
func logSearchPlans(b *testing.B, cfg db.Config, s db.Store, vocab []string) {
	b.Helper()
	words := map[string]string{"common": vocab[0], "one in a hundred": vocab[len(searchHead)-1], "rare": vocab[len(vocab)-1]}
	ctx := context.Background()
	for _, kind := range []string{"common", "one in a hundred", "rare"} {
		w := words[kind]
		if cfg.DatabaseURL != "" {
			conn, err := pgx.Connect(ctx, cfg.DatabaseURL)
			if err != nil {
				b.Fatal(err)
			}
			for _, name := range []string{"searchWalk", "searchMatches"} {
				var plan []string
				// The second run's plan: the first warms the cache.
				for range 2 {
					plan = nil
					q, args := generatedSQL(b, "pgdb", name, map[string]any{"OrgID": "acme", "Query": w, "UserID": "u0",
						"MaxRows": searchCandidates, "MaxWalk": 1024, "BelowSeq": int64(1<<63 - 1), "Terms": w, "MatchAny": false,
						// the newest five buckets of answer order (of 123 at 1M)
						"LoBucket": int64(118), "HiBucket": int64(122)})
					rows, _ := conn.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+q, args...)
					for rows.Next() {
						var line string
						if err := rows.Scan(&line); err != nil {
							b.Fatal(err)
						}
						plan = append(plan, line)
					}
					if err := rows.Err(); err != nil {
						b.Fatal(err)
					}
				}
				b.Logf("PostgreSQL plan of %s for %s word %q:\n%s", name, kind, w, strings.Join(plan, "\n"))
			}
			conn.Close(ctx)
			b.Logf("PostgreSQL search for %s word %q: %s", kind, w, timeSearch(b, s, w))
			continue
		}
		conn, err := sql.Open("sqlite3", "file:"+cfg.SQLitePath+"?_pragma=busy_timeout(10000)")
		if err != nil {
			b.Fatal(err)
		}
		var plans []string
		for _, name := range []string{"searchGroupKeys", "searchFetch"} {
			q, args := generatedSQL(b, "sqlitedb", name, map[string]any{"OrgID": "acme", "UserID": "u0", "Query": `"` + w + `"`,
				"Lo": int64(1 << 40), "Hi": int64(2<<40 - 1), "MaxRows": searchCandidates, "Keys": "[1,2]"})
			rows, err := conn.Query("EXPLAIN QUERY PLAN "+q, args...)
			if err != nil {
				b.Fatal(err)
			}
			plans = append(plans, name+":")
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					b.Fatal(err)
				}
				plans = append(plans, "  "+detail)
			}
			rows.Close()
		}
		conn.Close()
		b.Logf("SQLite plans of the search for %s word %q (%s):\n    %s", kind, w, timeSearch(b, s, w), strings.Join(plans, "\n    "))
	}
}

// timeSearch runs a whole search of the store for word twice, as u0, and
// says how many rows the second run found and how long it took.
func timeSearch(b *testing.B, s db.Store, word string) string {
	ctx := context.Background()
	var took time.Duration
	var got int
	for range 2 {
		start := time.Now()
		err := s.View(ctx, func(q db.Queries) error {
			found, err := q.SearchMessages(ctx, "acme", "u0", db.Search{Terms: []string{word}}, searchCandidates)
			got = len(found)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		took = time.Since(start)
	}
	return fmt.Sprintf("%d rows in %s", got, took.Round(time.Microsecond))
}

// generatedSQL is the query of a generated package (pgdb or sqlitedb)
// held in the Go constant name, read from its source, and its arguments in
// the order the generated code passes them, taken by field name from
// values.
func generatedSQL(b *testing.B, pkg, name string, values map[string]any) (string, []any) {
	b.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), "../../db/internal/"+pkg+"/search.sql.go", nil, 0)
	if err != nil {
		b.Fatal(err)
	}
	var q string
	var args []any
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			if n.Names[0].Name == name && len(n.Values) == 1 {
				if lit, ok := n.Values[0].(*ast.BasicLit); ok {
					q, _ = strconv.Unquote(lit.Value)
				}
			}
		case *ast.CallExpr:
			if len(n.Args) < 2 {
				return true
			}
			if id, ok := n.Args[1].(*ast.Ident); !ok || id.Name != name {
				return true
			}
			for _, a := range n.Args[2:] {
				sel, ok := a.(*ast.SelectorExpr)
				if !ok {
					b.Fatalf("%s: argument %T of %s", pkg, a, name)
				}
				v, ok := values[sel.Sel.Name]
				if !ok {
					b.Fatalf("%s: no value for argument %s of %s", pkg, sel.Sel.Name, name)
				}
				args = append(args, v)
			}
		}
		return true
	})
	if q == "" || len(args) == 0 {
		b.Fatalf("no %s query with its arguments in %s", name, pkg)
	}
	return q, args
}

// searchBenchConfig is the database of a bench size: a fresh one, or with
// CTALK_BENCH_SEARCH_KEEP the kept 1M one, and whether that already holds
// its messages (one whose load did not finish is loaded again).
func searchBenchConfig(b *testing.B, backend string, n int) (db.Config, bool) {
	dir := os.Getenv(searchBenchKeepEnv)
	if dir == "" || n < 1_000_000 {
		return dbtest.NewConfig(b, backend), false
	}
	name := fmt.Sprintf("search_%d_head%s", n, os.Getenv(searchBenchHeadEnv))
	const loadedQuery = "SELECT last_message_id FROM organizations WHERE id = 'acme'"
	var last int64
	if backend == "sqlite" {
		path := filepath.Join(dir, name+".sqlite3")
		if conn, err := sql.Open("sqlite3", "file:"+path+"?mode=ro"); err == nil {
			err = conn.QueryRow(loadedQuery).Scan(&last)
			conn.Close()
		}
		if last != int64(n) {
			for _, f := range []string{path, path + "-wal", path + "-shm"} {
				os.Remove(f)
			}
		}
		return db.Config{SQLitePath: path}, last == int64(n)
	}
	schema := pgx.Identifier{"ctalk_bench_" + name}.Sanitize()
	base := dbtest.PostgresURL(b)
	conn := dbtest.PGConn(b, base)
	if conn.QueryRow(b.Context(), strings.Replace(loadedQuery, "FROM ", "FROM "+schema+".", 1)).Scan(&last); last != int64(n) {
		dbtest.PGExec(b, base, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
		dbtest.PGExec(b, base, "CREATE SCHEMA "+schema)
	}
	u, err := url.Parse(base)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", "ctalk_bench_"+name)
	u.RawQuery = q.Encode()
	return db.Config{DatabaseURL: u.String()}, last == int64(n)
}
