package db_test

// Query plans: every query the tools run, exactly as sqlc generated it, must
// reach its rows through an index, so that its cost does not grow with the
// total number of messages (or users, tokens, organizations). The queries are
// read from the generated code, so a new query is checked without anyone
// remembering to add it here; its arguments are chosen by parameter name.
//
// Run with -v to print the plans (BENCHMARKS.md quotes them).

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// planTables are the tables whose full scans would make a call's cost grow
// with the data. (SQLite plans name the tools' aliases m and u.)
var planTables = map[string]bool{
	"messages": true, "users": true, "auth_tokens": true, "organizations": true, "login_throttle": true,
	"oauth_clients": true, "oauth_grants": true, "oauth_codes": true, "oauth_refresh_tokens": true,
	"messages_search": true, "s": true, "m": true, "u": true, "t": true, "g": true,
}

// planQuery is one generated query: its name, SQL, and the names of the
// arguments the generated code passes, in order.
type planQuery struct {
	name string
	sql  string
	args []string
}

// generatedQueries reads the queries and their argument names from the
// sqlc output in dir.
func generatedQueries(t *testing.T, dir string) []planQuery {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.sql.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no generated queries in %s: %v", dir, err)
	}
	consts := map[string]planQuery{} // Go const name → query
	var order []string
	calls := map[string][]string{} // Go const name → argument names
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", f, err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				if len(n.Values) != 1 {
					return true
				}
				lit, ok := n.Values[0].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				name, ok := strings.CutPrefix(s, "-- name: ")
				if err != nil || !ok {
					return true
				}
				name, _, _ = strings.Cut(name, " ")
				consts[n.Names[0].Name] = planQuery{name: name, sql: s}
				order = append(order, n.Names[0].Name)
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || len(n.Args) < 2 || !slices.Contains([]string{"Exec", "Query", "QueryRow", "ExecContext", "QueryContext", "QueryRowContext"}, sel.Sel.Name) {
					return true
				}
				id, ok := n.Args[1].(*ast.Ident)
				if !ok {
					return true
				}
				var names []string
				for _, a := range n.Args[2:] {
					switch a := a.(type) {
					case *ast.SelectorExpr:
						names = append(names, a.Sel.Name)
					case *ast.Ident:
						names = append(names, a.Name)
					default:
						t.Fatalf("%s: argument %T of %s is neither arg.Field nor a parameter", f, a, id.Name)
					}
				}
				calls[id.Name] = names
			}
			return true
		})
	}
	var qs []planQuery
	for _, c := range order {
		q := consts[c]
		q.args = calls[c]
		qs = append(qs, q)
	}
	return qs
}

// planArg is the value passed for an argument of a query: an existing
// organization, users and messages in the bulk data below.
// With recent set, cursors point near the newest message (a client that
// keeps up) instead of at the start (a first call).
func planArg(t *testing.T, query, arg string, recent bool) any {
	t.Helper()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	switch strings.ToLower(arg) {
	case "orgid":
		return "o0001"
	case "id":
		switch {
		case strings.Contains(query, "Organization") || strings.HasPrefix(query, "Allocate"):
			return "o0001"
		case strings.Contains(query, "Notification"):
			return int64(1)
		case strings.Contains(query, "Message") || query == "SaveDraft":
			return int64(1234)
		case strings.Contains(query, "OAuthClient"):
			return "c7"
		case strings.Contains(query, "OAuthGrant"):
			return "o0001/u7"
		}
		return "u7"
	case "fromuserid":
		return "u3"
	case "touserid", "userid", "actoruserid", "targetuserid":
		return "u7"
	case "afterid": // message ids go up to 10,000 in an organization
		if recent {
			return int64(9990)
		}
		return int64(0)
	case "beforeid": // the web page "Asked" pages backwards from the newest
		if recent {
			return int64(10)
		}
		return int64(1<<63 - 1)
	case "afterseq", "minseq", "seenseq": // event sequence numbers up to 20,000
		if recent {
			return int64(19990)
		}
		return int64(0)
	case "draftshare":
		return false
	case "userprefix", "userprefixend":
		return "user:o0001/"
	case "lo": // SQLite's search rows: group 1
		return int64(1 << 40)
	case "hi":
		return int64(2<<40 - 1)
	case "keys": // SQLite's search keys, a JSON array
		return "[1,2,3]"
	case "threadid":
		return int64(1234)
	case "after", "through": // SQLite's search keys: from the first
		return int64(0)
	case "groupid": // SQLite's search lists: a word of group 1
		return int64(1)
	case "term":
		return "retri"
	case "below":
		return int64(1<<63 - 1)
	case "lists":
		return `[[1,"retri"]]`
	case "blocks":
		return `[[1,"retri",1,""]]`
	case "words":
		return "retry logic"
	case "belowseq": // PostgreSQL's search: from the newest answer
		return int64(1<<63 - 1)
	case "maxwalk":
		return int32(1024)
	case "lobucket", "hibucket": // PostgreSQL's search: buckets of answer order
		return int64(1)
	case "query": // a search: one word, valid FTS5 syntax
		return "retry"
	case "terms": // PostgreSQL's search words
		return "retry"
	case "matchany":
		return false
	case "askedseq", "answeredseq", "failures":
		return int64(0)
	case "maxrows":
		return 21
	case "ids": // notifications claimed by a worker
		return []int64{1, 2}
	case "onquestions", "onanswers", "excerpts":
		return true
	case "delayseconds", "quietstart", "quietend":
		return 0
	case "tokenhash", "keeptokenhash", "codehash":
		return make([]byte, 32)
	case "grantid":
		return "o0001/u7"
	case "since", "before", "revokedat", "deactivatedat", "answeredat", "draftupdatedat", "createdat", "expiresat",
		"askedat", "lockeduntil", "updatedat", "unlocked", "usedat", "lastusedat", "now", "at", "adminsince", "stalebefore", "sharedat", "cutoff",
		"leaseuntil", "nextattemptat", "deliveredat", "pausedat":
		return now
	case "draft", "drafttext", "answertext", "notes", "profilenotes", "passwordhash", "question", "name", "ownership",
		"adminpasswordhash", "accountkey", "addrkey", "key", "resource", "scope", "clientid", "clientname",
		"redirecturis", "redirecturi", "codechallenge", "action", "address", "detail",
		"channel", "secret", "timezone", "outcome", "lasterror", "pausereason":
		return "x"
	}
	t.Fatalf("%s: no plan value for argument %s: add one to planArg", query, arg)
	return nil
}

// Bulk data: 2,000 organizations of 10 users with a token each, 5,000
// throttle rows, and 100,000 messages in the first ten organizations (10%
// unanswered, the answered ones in the search tables), counters
// consistent; an OAuth grant per user (one in ten revoked) with an access
// token, a code and a refresh token each, and 5,000 registered clients.
// Postgres gets ANALYZE, as autovacuum would. SQLite, like production, has
// no statistics (no ANALYZE), so its plans depend on the schema alone and a
// tenth of the data shows them.
var (
	pgBulk = []string{
		`INSERT INTO organizations (id, name, admin_password_hash, created_at, last_message_id, last_event_seq)
		 SELECT 'o' || lpad(g::text, 4, '0'), 'Org ' || g, 'x', now(),
		        CASE WHEN g <= 10 THEN 10000 ELSE 0 END, CASE WHEN g <= 10 THEN 20000 ELSE 0 END
		 FROM generate_series(1, 2000) g`,
		`INSERT INTO users (org_id, id, name, password_hash, ownership, notes, profile_notes, created_at)
		 SELECT o.id, 'u' || g, 'User ' || g, 'x', '', '', '', now() FROM organizations o, generate_series(0, 9) g`,
		`INSERT INTO auth_tokens (token_hash, org_id, user_id, created_at, expires_at)
		 SELECT sha256(convert_to(org_id || '/' || id, 'UTF8')), org_id, id, now(), now() + interval '1 day' FROM users`,
		`INSERT INTO login_throttle (key, failures, locked_until, updated_at)
		 SELECT 'addr:10.0.' || g, 1, now(), now() FROM generate_series(1, 5000) g`,
		`INSERT INTO messages (org_id, id, from_user_id, to_user_id, question, asked_at, asked_seq, answer_text, answered_at, answered_seq, thread_id)
		 SELECT org, id, 'u' || ((t + 1 + (id / 10) % 9) % 10), 'u' || t, 'Question ' || id, now(), id,
		        CASE WHEN id % 10 <> 0 THEN 'Answer ' || id END, CASE WHEN id % 10 <> 0 THEN now() END,
		        CASE WHEN id % 10 <> 0 THEN 10000 + id END, id
		 FROM (SELECT 'o' || lpad((1 + (g - 1) / 10000)::text, 4, '0') AS org, 1 + (g - 1) % 10000 AS id, g % 10 AS t
		       FROM generate_series(1, 100000) g) s`,
		`INSERT INTO messages_search (org_id, message_id, answered_seq, from_user_id, to_user_id, shared, body)
		 SELECT org_id, id, answered_seq, from_user_id, to_user_id, id % 3 = 0, strip(to_tsvector('english', question || ' ' || answer_text))
		 FROM messages WHERE answered_seq IS NOT NULL`,
		`INSERT INTO oauth_clients (id, name, redirect_uris, created_at)
		 SELECT 'c' || g, 'Client ' || g, '["http://127.0.0.1/cb"]', now() FROM generate_series(1, 5000) g`,
		`INSERT INTO oauth_grants (id, org_id, user_id, client_id, client_name, resource, scope, created_at, revoked_at)
		 SELECT org_id || '/' || id, org_id, id, 'c' || (1 + abs(hashtext(org_id || id)) % 5000), 'Client', 'x', 'ctalk', now(),
		        CASE WHEN id = 'u9' THEN now() - interval '1 day' END FROM users`,
		`INSERT INTO auth_tokens (token_hash, org_id, user_id, created_at, expires_at, grant_id, resource, scope)
		 SELECT sha256(convert_to('oauth/' || id, 'UTF8')), org_id, user_id, now(), now() + interval '1 hour', id, 'x', 'ctalk'
		 FROM oauth_grants`,
		`INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, code_challenge, created_at, expires_at)
		 SELECT sha256(convert_to('code/' || id, 'UTF8')), id, 'http://127.0.0.1/cb', 'x', now(), now() + interval '1 minute'
		 FROM oauth_grants`,
		`INSERT INTO oauth_refresh_tokens (token_hash, grant_id, created_at, expires_at)
		 SELECT sha256(convert_to('refresh/' || id, 'UTF8')), id, now(), now() + interval '30 days' FROM oauth_grants`,
		`ANALYZE`,
	}
	sqliteBulk = []string{
		`WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 200)
		 INSERT INTO organizations (id, name, admin_password_hash, created_at, last_message_id, last_event_seq)
		 SELECT printf('o%04d', i), 'Org ' || i, 'x', '2026-03-01T09:00:00.000000Z',
		        CASE WHEN i <= 10 THEN 1000 ELSE 0 END, CASE WHEN i <= 10 THEN 2000 ELSE 0 END FROM g`,
		`WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i < 9)
		 INSERT INTO users (org_id, id, name, password_hash, ownership, notes, profile_notes, created_at)
		 SELECT o.id, 'u' || g.i, 'User ' || g.i, 'x', '', '', '', '2026-03-01T09:00:00.000000Z' FROM organizations o CROSS JOIN g`,
		`INSERT INTO auth_tokens (token_hash, org_id, user_id, created_at, expires_at)
		 SELECT randomblob(32), org_id, id, '2026-03-01T09:00:00.000000Z', '2026-03-02T09:00:00.000000Z' FROM users`,
		`WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 500)
		 INSERT INTO login_throttle (key, failures, locked_until, updated_at)
		 SELECT 'addr:10.0.' || i, 1, '2026-03-01T09:00:00.000000Z', '2026-03-01T09:00:00.000000Z' FROM g`,
		`WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 10000)
		 INSERT INTO messages (org_id, id, from_user_id, to_user_id, question, asked_at, asked_seq, answer_text, answered_at, answered_seq, thread_id)
		 SELECT org, id, 'u' || ((t + 1 + (id / 10) % 9) % 10), 'u' || t, 'Question ' || id, '2026-03-01T09:00:00.000000Z', id,
		        CASE WHEN id % 10 <> 0 THEN 'Answer ' || id END,
		        CASE WHEN id % 10 <> 0 THEN '2026-03-01T09:00:00.000000Z' END,
		        CASE WHEN id % 10 <> 0 THEN 1000 + id END, id
		 FROM (SELECT printf('o%04d', 1 + (i - 1) / 1000) AS org, 1 + (i - 1) % 1000 AS id, i % 10 AS t FROM g)`,
		`INSERT INTO messages_search (org_id, message_id)
		 SELECT org_id, id FROM messages WHERE answered_seq IS NOT NULL ORDER BY org_id, answered_seq`,
		`INSERT INTO search_groups (org_id, user_id) SELECT DISTINCT org_id, from_user_id FROM messages WHERE answered_seq IS NOT NULL
		 UNION SELECT DISTINCT org_id, to_user_id FROM messages WHERE answered_seq IS NOT NULL`,
		`INSERT INTO messages_fts (rowid, body)
		 SELECT g.id * 1099511627776 + 1099511627775 - s.id, m.question || ' ' || m.answer_text FROM messages_search s
		 JOIN messages m ON m.org_id = s.org_id AND m.id = s.message_id
		 JOIN search_groups g ON g.org_id = m.org_id AND g.user_id IN (m.from_user_id, m.to_user_id)`,
		`WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 500)
		 INSERT INTO oauth_clients (id, name, redirect_uris, created_at)
		 SELECT 'c' || i, 'Client ' || i, '["http://127.0.0.1/cb"]', '2026-03-01T09:00:00.000000Z' FROM g`,
		`INSERT INTO oauth_grants (id, org_id, user_id, client_id, client_name, resource, scope, created_at, revoked_at)
		 SELECT org_id || '/' || id, org_id, id, 'c' || (1 + rowid % 500), 'Client', 'x', 'ctalk', '2026-03-01T09:00:00.000000Z',
		        CASE WHEN id = 'u9' THEN '2026-02-28T09:00:00.000000Z' END FROM users`,
		`INSERT INTO auth_tokens (token_hash, org_id, user_id, created_at, expires_at, grant_id, resource, scope)
		 SELECT randomblob(32), org_id, user_id, '2026-03-01T09:00:00.000000Z', '2026-03-01T10:00:00.000000Z', id, 'x', 'ctalk'
		 FROM oauth_grants`,
		`INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, code_challenge, created_at, expires_at)
		 SELECT randomblob(32), id, 'http://127.0.0.1/cb', 'x', '2026-03-01T09:00:00.000000Z', '2026-03-01T09:01:00.000000Z'
		 FROM oauth_grants`,
		`INSERT INTO oauth_refresh_tokens (token_hash, grant_id, created_at, expires_at)
		 SELECT randomblob(32), id, '2026-03-01T09:00:00.000000Z', '2026-03-31T09:00:00.000000Z' FROM oauth_grants`,
	}
)

func TestQueryPlansUseIndexes(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		cfg := dbtest.NewConfig(t, "sqlite")
		dbtest.Open(t, cfg) // migrates
		conn, err := sql.Open("sqlite3", "file:"+cfg.SQLitePath+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		for _, s := range sqliteBulk {
			if _, err := conn.Exec(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		for _, q := range planCases(t, generatedQueries(t, "internal/sqlitedb")) {
			q = sqliteSlices(t, q)
			rows, err := conn.Query("EXPLAIN QUERY PLAN "+q.sql, q.args...)
			if err != nil {
				t.Fatalf("%s: EXPLAIN QUERY PLAN: %v", q.name, err)
			}
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			rows.Close()
			t.Logf("%s:\n    %s", q.name, strings.Join(plan, "\n    "))
			for _, step := range plan {
				// "SCAN t" reads the whole table, "SCAN t USING INDEX i" the whole index.
				if f := strings.Fields(step); len(f) >= 2 && f[0] == "SCAN" && planTables[f[1]] {
					t.Errorf("%s scans %s in full (%q): its cost grows with the table; add or fix an index", q.name, f[1], step)
				}
			}
		}
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url, _ := dbtest.NewPostgresSchema(t)
		dbtest.Open(t, db.Config{DatabaseURL: url}) // migrates
		conn := dbtest.PGConn(t, url)
		for _, s := range pgBulk {
			if _, err := conn.Exec(t.Context(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		for _, q := range planCases(t, generatedQueries(t, "internal/pgdb")) {
			var raw []byte
			if err := conn.QueryRow(t.Context(), "EXPLAIN (FORMAT JSON) "+q.sql, q.args...).Scan(&raw); err != nil {
				t.Fatalf("%s: EXPLAIN: %v", q.name, err)
			}
			var plans []struct {
				Plan pgPlan `json:"Plan"`
			}
			if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
				t.Fatalf("%s: EXPLAIN output %s: %v", q.name, raw, err)
			}
			var b strings.Builder
			plans[0].Plan.write(&b, 1)
			t.Logf("%s:\n%s", q.name, b.String())
			plans[0].Plan.walk(func(n pgPlan) {
				if n.NodeType == "Seq Scan" && planTables[n.Relation] {
					t.Errorf("%s: Seq Scan on %s: its cost grows with the table; add or fix an index", q.name, n.Relation)
				}
			})
		}
	})
}

// sqliteSlices binds a SQLite query's sqlc.slice arguments, which the
// generated code expands at run time (passing a built query the parse above
// does not see), as one id each; only queries whose sole arguments are
// slices are supported.
func sqliteSlices(t *testing.T, c planCase) planCase {
	n := len(sliceMarker.FindAllString(c.sql, -1))
	if n == 0 {
		return c
	}
	if len(c.args) != 0 {
		t.Fatalf("%s: a slice beside other arguments: extend sqliteSlices", c.name)
	}
	c.sql = sliceMarker.ReplaceAllString(c.sql, "?")
	for range n {
		c.args = append(c.args, int64(1))
	}
	return c
}

var sliceMarker = regexp.MustCompile(`/\*SLICE:\w+\*/\?`)

// planCase is a query with the arguments to explain it with.
type planCase struct {
	name, sql string
	args      []any
}

// planCases gives each query its arguments, and a query with a cursor a
// second case with a recent cursor.
func planCases(t *testing.T, qs []planQuery) []planCase {
	t.Helper()
	var cases []planCase
	for _, q := range qs {
		for _, recent := range []bool{false, true} {
			c := planCase{name: q.name, sql: q.sql}
			cursor := false
			for _, a := range q.args {
				c.args = append(c.args, planArg(t, q.name, a, recent))
				cursor = cursor || strings.EqualFold(a, "afterid") || strings.EqualFold(a, "afterseq")
			}
			if recent {
				if !cursor {
					continue
				}
				c.name += " (recent cursor)"
			}
			cases = append(cases, c)
		}
	}
	slices.SortStableFunc(cases, func(a, b planCase) int { return strings.Compare(a.name, b.name) })
	return cases
}

// pgPlan is a node of EXPLAIN (FORMAT JSON).
type pgPlan struct {
	NodeType  string   `json:"Node Type"`
	Relation  string   `json:"Relation Name"`
	Alias     string   `json:"Alias"`
	Index     string   `json:"Index Name"`
	IndexCond string   `json:"Index Cond"`
	Filter    string   `json:"Filter"`
	SortKey   []string `json:"Sort Key"`
	Plans     []pgPlan `json:"Plans"`
}

func (p pgPlan) walk(fn func(pgPlan)) {
	fn(p)
	for _, c := range p.Plans {
		c.walk(fn)
	}
}

// write renders the plan like EXPLAIN's text format, one node a line.
func (p pgPlan) write(b *strings.Builder, depth int) {
	line := p.NodeType
	if p.Index != "" {
		line += " using " + p.Index
	}
	if p.Relation != "" {
		line += " on " + p.Relation
		if p.Alias != p.Relation {
			line += " " + p.Alias
		}
	}
	if p.IndexCond != "" {
		line += "  [" + squeeze(p.IndexCond) + "]"
	}
	if len(p.SortKey) > 0 {
		line += "  [sort " + strings.Join(p.SortKey, ", ") + "]"
	}
	fmt.Fprintf(b, "%s%s\n", strings.Repeat("  ", depth), line)
	for _, c := range p.Plans {
		c.write(b, depth+1)
	}
}

var spaces = regexp.MustCompile(`\s+`)

func squeeze(s string) string { return spaces.ReplaceAllString(s, " ") }
