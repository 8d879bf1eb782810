package db_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3"

	"github.com/ctalk/ctalk/db"
	ctalksql "github.com/ctalk/ctalk/sql"
)

// postgresURLEnv names the variable that points the tests at a PostgreSQL
// server. Each test gets its own schema there, so a shared database is fine.
const postgresURLEnv = "CTALK_TEST_DATABASE_URL"

// backends are the subtest names forEachBackend runs, in order.
var backends = []string{"sqlite", "postgres"}

// forEachBackend runs fn in parallel subtests "sqlite" and "postgres", each
// with a fresh, migrated Store that is closed when the subtest ends.
func forEachBackend(t *testing.T, fn func(t *testing.T, s db.Store)) {
	t.Helper()
	forEachConfig(t, func(t *testing.T, cfg db.Config) {
		fn(t, openStore(t, cfg))
	})
}

// forEachConfig runs fn in parallel subtests "sqlite" and "postgres", each
// with the Config of a fresh, empty database.
func forEachConfig(t *testing.T, fn func(t *testing.T, cfg db.Config)) {
	t.Helper()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			fn(t, newConfig(t, backend))
		})
	}
}

// newConfig returns the Config of a fresh, empty database of the backend.
func newConfig(t *testing.T, backend string) db.Config {
	t.Helper()
	switch backend {
	case "sqlite":
		return db.Config{SQLitePath: filepath.Join(t.TempDir(), "relay.sqlite3")}
	case "postgres":
		u, _ := newPostgresSchema(t)
		return db.Config{DatabaseURL: u}
	}
	t.Fatalf("newConfig: unknown backend %q", backend)
	return db.Config{}
}

// postgresURL returns the server URL from the environment, or skips the test.
func postgresURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv(postgresURLEnv)
	if u == "" {
		t.Skipf("%s is not set: skipping PostgreSQL (set it to e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", postgresURLEnv)
	}
	return u
}

// newPostgresSchema creates an empty schema with a random name, drops it when
// the test ends, and returns a URL whose connections use it as search_path.
func newPostgresSchema(t *testing.T) (dbURL, schema string) {
	t.Helper()
	base := postgresURL(t)
	var b [8]byte
	rand.Read(b[:])
	schema = "ctalk_test_" + hex.EncodeToString(b[:])

	pgExec(t, base, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	t.Cleanup(func() {
		// t.Context is already canceled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})

	dbURL, err := withSearchPath(base, schema)
	if err != nil {
		t.Fatalf("%s: %v", postgresURLEnv, err)
	}
	return dbURL, schema
}

// withSearchPath adds search_path to a PostgreSQL URL or keyword/value DSN;
// pgx sends unknown parameters to the server as run-time settings.
func withSearchPath(base, schema string) (string, error) {
	if !strings.HasPrefix(base, "postgres://") && !strings.HasPrefix(base, "postgresql://") {
		return base + " search_path=" + schema, nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// pgConn opens a plain pgx connection, closed when the test ends.
func pgConn(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("pgx.Connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

// pgExec runs one statement on its own connection.
func pgExec(t *testing.T, dbURL, sql string) {
	t.Helper()
	if _, err := pgConn(t, dbURL).Exec(t.Context(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// openStore opens (and migrates) the database, closing it when the test ends.
func openStore(t *testing.T, cfg db.Config) db.Store {
	t.Helper()
	s, err := db.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("db.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// migrationVersions lists the versions of the embedded migrations of a backend, ascending.
func migrationVersions(t *testing.T, backend string) []int64 {
	t.Helper()
	entries, err := fs.ReadDir(ctalksql.Migrations, backend+"/migrations")
	if err != nil {
		t.Fatalf("read %s migrations: %v", backend, err)
	}
	var versions []int64
	for _, e := range entries {
		v, err := goose.NumericComponent(e.Name())
		if err != nil {
			t.Fatalf("migration %s: %v", e.Name(), err)
		}
		versions = append(versions, v)
	}
	slices.Sort(versions)
	if len(versions) == 0 {
		t.Fatalf("no %s migrations embedded", backend)
	}
	return versions
}

// mustTx runs fn in one transaction and fails the test if it does not commit.
func mustTx(t *testing.T, s db.Store, fn func(q db.Queries) error) {
	t.Helper()
	if err := s.InTx(t.Context(), fn); err != nil {
		t.Fatalf("InTx: %v", err)
	}
}

// inTx runs fn in one transaction and returns its error.
func inTx(t *testing.T, s db.Store, fn func(q db.Queries) error) error {
	t.Helper()
	return s.InTx(t.Context(), fn)
}

// view runs fn in a read-only transaction and fails the test on error.
func view(t *testing.T, s db.Store, fn func(q db.Queries) error) {
	t.Helper()
	if err := s.View(t.Context(), fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// wantErr fails the test unless err wraps want.
func wantErr(t *testing.T, call string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s = %v, want %v", call, err, want)
	}
}

// t0 is the base time of the fixtures: UTC, with microseconds, so that values
// stored on either backend come back equal.
var t0 = time.Date(2026, 11, 29, 10, 11, 12, 123456000, time.UTC)

func newOrg(id string) db.Organization {
	return db.Organization{ID: id, Name: "Org " + id, AdminPasswordHash: "admin-hash-" + id, CreatedAt: t0}
}

func newUser(orgID, id string) db.User {
	return db.User{
		OrgID: orgID, ID: id, Name: "Name of " + id, PasswordHash: "hash-" + id,
		Ownership: id + " owns " + orgID, Notes: "notes of " + id, ProfileNotes: "profile of " + id,
		CreatedAt: t0,
	}
}

// seedOrg creates an organization and its users in one transaction.
func seedOrg(t *testing.T, s db.Store, orgID string, userIDs ...string) {
	t.Helper()
	mustTx(t, s, func(q db.Queries) error {
		if err := q.CreateOrganization(t.Context(), newOrg(orgID)); err != nil {
			return err
		}
		for _, id := range userIDs {
			if err := q.CreateUser(t.Context(), newUser(orgID, id)); err != nil {
				return err
			}
		}
		return nil
	})
}

// ask stores a question the way a tool does (number it, then insert it) and
// returns it as it was stored.
func ask(t *testing.T, s db.Store, orgID, from, to, question string, at time.Time) db.Message {
	t.Helper()
	m := db.Message{OrgID: orgID, FromUserID: from, ToUserID: to, Question: question, AskedAt: at}
	mustTx(t, s, func(q db.Queries) error {
		var err error
		if m.ID, m.AskedSeq, err = q.AllocateMessage(t.Context(), orgID); err != nil {
			return err
		}
		return q.CreateMessage(t.Context(), m)
	})
	return m
}

// answer answers a question the way a tool does and returns it as answered.
func answer(t *testing.T, s db.Store, m db.Message, text string, at time.Time) db.Message {
	t.Helper()
	mustTx(t, s, func(q db.Queries) error {
		seq, err := q.AllocateEvent(t.Context(), m.OrgID)
		if err != nil {
			return err
		}
		if err := q.AnswerMessage(t.Context(), m.OrgID, m.ID, text, at, seq); err != nil {
			return err
		}
		m.AnswerText, m.AnsweredAt, m.AnsweredSeq = &text, &at, &seq
		return nil
	})
	return m
}

// getMessage reads a message in a read-only transaction.
func getMessage(t *testing.T, s db.Store, orgID string, id int64) (db.Message, error) {
	t.Helper()
	var m db.Message
	err := s.View(t.Context(), func(q db.Queries) error {
		var err error
		m, err = q.GetMessage(t.Context(), orgID, id)
		return err
	})
	return m, err
}

func ptr[T any](v T) *T { return &v }
