package relay

// Benchmarks of the hot paths below every face (the token check, asking,
// the inbox) on both backends. server/bench_test.go measures the same calls
// through HTTP and /mcp. Run with:
//
//	go test -run '^$' -bench . -benchtime 3s ./internal/relay

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// benchStore opens a fresh, migrated store of backend for a benchmark, and
// a function that runs SQL on the same database directly, for bulk loads.
func benchStore(b *testing.B, backend string) (db.Store, func(query string, args ...any)) {
	b.Helper()
	cfg := dbtest.NewConfig(b, backend)
	exec := func(query string, args ...any) {
		b.Helper()
		dbtest.Exec(b, cfg, query, args...)
	}
	return dbtest.Open(b, cfg), exec
}

// benchTeam stores organization acme with users u0…u(n-1) and a token for
// each, straight through the store: no password hashing.
func benchTeam(b *testing.B, s db.Store, n int) (tokens []string) {
	b.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	err := s.InTx(context.Background(), func(q db.Queries) error {
		if err := q.CreateOrganization(context.Background(), db.Organization{ID: "acme", Name: "Acme", AdminPasswordHash: "unused", CreatedAt: now}); err != nil {
			return err
		}
		for i := range n {
			id := "u" + strconv.Itoa(i)
			u := db.User{OrgID: "acme", ID: id, Name: "User " + id, PasswordHash: "unused", Ownership: "repo-" + id, CreatedAt: now}
			if err := q.CreateUser(context.Background(), u); err != nil {
				return err
			}
			token, hash := newToken()
			tokens = append(tokens, token)
			if err := q.CreateToken(context.Background(), db.Token{TokenHash: hash, OrgID: "acme", UserID: id,
				CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatalf("seed: %v", err)
	}
	return tokens
}

// benchToken gives a user of organization acme a new token.
func benchToken(b *testing.B, s db.Store, userID string) string {
	b.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	token, hash := newToken()
	err := s.InTx(context.Background(), func(q db.Queries) error {
		return q.CreateToken(context.Background(), db.Token{TokenHash: hash, OrgID: "acme", UserID: userID,
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
	})
	if err != nil {
		b.Fatalf("token: %v", err)
	}
	return token
}

// benchTeamCalls runs call in parallel on each backend, for a team of 16
// with a token each; i counts the calls of one goroutine.
func benchTeamCalls(b *testing.B, call func(ctx context.Context, s db.Store, svc *Service, tokens []string, i int) error) {
	for _, backend := range dbtest.Backends {
		b.Run(backend, func(b *testing.B) {
			s, _ := benchStore(b, backend)
			tokens := benchTeam(b, s, 16)
			svc := New(s, Options{})
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					if err := call(ctx, s, svc, tokens, i); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkAuthenticate is the token check every call makes: one SHA-256
// and one primary-key join in a read transaction.
func BenchmarkAuthenticate(b *testing.B) {
	benchTeamCalls(b, func(ctx context.Context, s db.Store, svc *Service, tokens []string, i int) error {
		return s.View(ctx, func(q db.Queries) error {
			_, err := svc.authenticate(ctx, q, Credentials{Token: tokens[i%len(tokens)]})
			return err
		})
	})
}

// BenchmarkAskPerson is ask_person's work without the transport: validation,
// then one AskPerson call (token check, recipient, numbering, insert) in one
// transaction.
func BenchmarkAskPerson(b *testing.B) {
	benchTeamCalls(b, func(ctx context.Context, _ db.Store, svc *Service, tokens []string, i int) error {
		from := i % len(tokens)
		_, err := svc.Ask(ctx, Credentials{Token: tokens[from]},
			"u"+strconv.Itoa((from+1)%len(tokens)), "How do retries work? "+strconv.Itoa(i))
		return err
	})
}

// BenchmarkCheckInbox reads the first page of an inbox holding n unanswered
// questions: the partial index keeps it flat in n.
func BenchmarkCheckInbox(b *testing.B) {
	for _, backend := range dbtest.Backends {
		for _, n := range []int{100, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/inbox=%d", backend, n), func(b *testing.B) {
				s, exec := benchStore(b, backend)
				tokens := benchTeam(b, s, 2)
				fillInbox(exec, backend, n)
				svc := New(s, Options{})
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						out, err := svc.Inbox(ctx, Credentials{Token: tokens[0]}, 0)
						if err != nil || len(out.Questions) != inboxPage {
							b.Fatalf("checkInbox = %v, %v; want a full page", out, err)
						}
					}
				})
			})
		}
	}
}

// fillInbox stores n unanswered questions from u1 to u0 in bulk, keeping
// the organization's counters consistent.
func fillInbox(exec func(string, ...any), backend string, n int) {
	const cols = "INSERT INTO messages (org_id, id, from_user_id, to_user_id, question, asked_at, asked_seq) "
	if backend == "postgres" {
		exec(cols+"SELECT 'acme', g, 'u1', 'u0', 'What is the retry policy of service ' || g || '?', now(), g "+
			"FROM generate_series(1, $1::bigint) g", n)
		exec("ANALYZE messages")
	} else {
		exec("WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM g WHERE i < ?) "+cols+
			"SELECT 'acme', i, 'u1', 'u0', 'What is the retry policy of service ' || i || '?', '2026-03-01T09:00:00.000000Z', i FROM g", n)
	}
	exec("UPDATE organizations SET last_message_id = " + strconv.Itoa(n) + ", last_event_seq = " + strconv.Itoa(n) + " WHERE id = 'acme'")
}
