// Package dbtest gives tests a fresh, migrated database on each backend:
// SQLite in a temporary directory always, and PostgreSQL (a fresh schema on
// the server named by CTALK_TEST_DATABASE_URL) whenever that variable is set.
// CI always sets it.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ctalk/ctalk/db"
)

// PostgresURLEnv names the variable that points the tests at a PostgreSQL
// server. Each test gets its own schema there, so a shared database is fine.
const PostgresURLEnv = "CTALK_TEST_DATABASE_URL"

// Backends are the subtest names ForEachBackend runs, in order.
var Backends = []string{"sqlite", "postgres"}

// ForEachBackend runs fn in parallel subtests "sqlite" and "postgres", each
// with a fresh, migrated Store that is closed when the subtest ends.
func ForEachBackend(t *testing.T, fn func(t *testing.T, s db.Store)) {
	t.Helper()
	ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		fn(t, Open(t, cfg))
	})
}

// ForEachConfig runs fn in parallel subtests "sqlite" and "postgres", each
// with the Config of a fresh, empty database.
func ForEachConfig(t *testing.T, fn func(t *testing.T, cfg db.Config)) {
	t.Helper()
	for _, backend := range Backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			fn(t, NewConfig(t, backend))
		})
	}
}

// NewConfig returns the Config of a fresh, empty database of the backend.
func NewConfig(t testing.TB, backend string) db.Config {
	t.Helper()
	switch backend {
	case "sqlite":
		return db.Config{SQLitePath: filepath.Join(t.TempDir(), "relay.sqlite3")}
	case "postgres":
		u, _ := NewPostgresSchema(t)
		return db.Config{DatabaseURL: u}
	}
	t.Fatalf("NewConfig: unknown backend %q", backend)
	return db.Config{}
}

// PostgresURL returns the server URL from the environment, or skips the test.
func PostgresURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(PostgresURLEnv)
	if u == "" {
		t.Skipf("%s is not set: skipping PostgreSQL (set it to e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", PostgresURLEnv)
	}
	return u
}

// NewPostgresSchema creates an empty schema with a random name, drops it when
// the test ends, and returns a URL whose connections use it as search_path.
func NewPostgresSchema(t testing.TB) (dbURL, schema string) {
	t.Helper()
	base := PostgresURL(t)
	var b [8]byte
	rand.Read(b[:])
	schema = "ctalk_test_" + hex.EncodeToString(b[:])

	PGExec(t, base, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
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
		t.Fatalf("%s: %v", PostgresURLEnv, err)
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

// WithAppName returns dbURL with a unique application_name, and that name:
// Connections can then count one store's connections on a PostgreSQL server
// other tests share.
func WithAppName(t testing.TB, dbURL string) (tagged, app string) {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	app = "ctalk_test_" + hex.EncodeToString(b[:])
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String(), app
}

// Connections counts the server's connections named app (see WithAppName),
// and how many of them are running a query or sit in a transaction. It asks
// over a connection of its own, closed before it returns.
func Connections(t testing.TB, dbURL, app string) (total, busy int) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("pgx.Connect: %v", err)
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, `
		SELECT count(*), count(*) FILTER (WHERE state <> 'idle')
		FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`, app).Scan(&total, &busy)
	if err != nil {
		t.Fatalf("count connections: %v", err)
	}
	return total, busy
}

// PGConn opens a plain pgx connection, closed when the test ends.
func PGConn(t testing.TB, dbURL string) *pgx.Conn {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("pgx.Connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	return conn
}

// PGExec runs one statement on its own connection.
func PGExec(t testing.TB, dbURL, sql string, args ...any) {
	t.Helper()
	if _, err := PGConn(t, dbURL).Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%.200s: %v", sql, err)
	}
}

// Exec runs one statement directly on the database of cfg, either backend:
// for bulk loads and checks that go around the Store.
func Exec(t testing.TB, cfg db.Config, query string, args ...any) {
	t.Helper()
	if cfg.DatabaseURL != "" {
		PGExec(t, cfg.DatabaseURL, query, args...)
		return
	}
	conn, err := sql.Open("sqlite3", "file:"+cfg.SQLitePath+"?_pragma=busy_timeout(10000)")
	if err == nil {
		_, err = conn.Exec(query, args...)
		conn.Close()
	}
	if err != nil {
		t.Fatalf("%.200s: %v", query, err)
	}
}

// Open opens (and migrates) the database, closing it when the test ends.
func Open(t testing.TB, cfg db.Config) db.Store {
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
