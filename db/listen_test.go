package db_test

import (
	"bytes"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestPooled: which DATABASE_URLs ctalk takes for a transaction pooler (and
// so sends its queries unnamed).
func TestPooled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  db.Config
		want bool
	}{
		{db.Config{SQLitePath: "relay.sqlite3"}, false},
		{db.Config{DatabaseURL: "postgres://u:p@db.example:5432/ctalk"}, false},
		{db.Config{DatabaseURL: "postgres://u:p@db.example:5432/ctalk", ListenURL: "postgres://u:p@db.example:5432/ctalk"}, false},
		{db.Config{DatabaseURL: "postgres://u:p@pool.example:5432/ctalk", ListenURL: "postgres://u:p@db.example:5432/ctalk"}, true},
		{db.Config{DatabaseURL: "postgres://u:p@db.example:6432/ctalk"}, true},
		{db.Config{DatabaseURL: "postgresql://u:p@aws-0-eu-central-1.pooler.supabase.com:6543/postgres"}, true},
		{db.Config{DatabaseURL: "postgresql://u:p@ep-cool-name-123-pooler.eu-central-1.aws.neon.tech/neondb?sslmode=require"}, true},
		{db.Config{DatabaseURL: "postgres://u:p@pgbouncer.railway.internal:5432/railway"}, true},
		{db.Config{DatabaseURL: "host=db.example port=6432 dbname=ctalk"}, true},
	} {
		if got := tc.cfg.Pooled(); got != tc.want {
			t.Errorf("Config{DatabaseURL: %q, ListenURL: %q}.Pooled() = %v, want %v", tc.cfg.DatabaseURL, tc.cfg.ListenURL, got, tc.want)
		}
	}
}

// logBuffer is a slog destination tests can read while the store writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestListenURL: with CTALK_LISTEN_DATABASE_URL the LISTEN connection is
// opened from it (not from DATABASE_URL), every query works unnamed (as
// behind a pooler), and a question committed through another store wakes the
// waiter within a second.
func TestListenURL(t *testing.T) {
	t.Parallel()
	base, _ := newPostgresSchema(t)
	listenURL, app := dbtest.WithAppName(t, base)
	log := &logBuffer{}
	waiterStore := openStore(t, db.Config{DatabaseURL: base, ListenURL: listenURL, Logger: slog.New(slog.NewTextHandler(log, nil))})
	askerStore := openStore(t, db.Config{DatabaseURL: base})
	seedOrg(t, waiterStore, "a", "amy", "bob")
	wake := subscribe(t, waiterStore, "a", "bob")
	settle(wake)

	start := time.Now()
	askAndNotify(t, askerStore, "a", "amy", "bob", "through the other store")
	if !woken(wake, time.Second) {
		t.Fatalf("subscriber with a LISTEN URL not woken within 1s of a question committed through another store")
	}
	t.Logf("wake-up through the LISTEN URL after %v", time.Since(start).Round(time.Millisecond))
	var listening int
	err := pgConn(t, base).QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN %'`,
		app).Scan(&listening)
	if err != nil || listening != 1 {
		t.Errorf("connections of CTALK_LISTEN_DATABASE_URL that ran LISTEN = %d, %v; want 1", listening, err)
	}
	if strings.Contains(log.String(), "5 s poll") {
		t.Errorf("the store warned that wake-ups fall back to the poll although its LISTEN connection hears:\n%s", log)
	}
}

// TestListenURLThatHearsNothing: a LISTEN connection that does not hear what
// the pool's commits send (here another schema; behind a transaction pooler,
// the pooler) is reported in the log, with what to set, and waiters are still
// woken by the fallback poll.
func TestListenURLThatHearsNothing(t *testing.T) {
	t.Parallel()
	base, _ := newPostgresSchema(t)
	other, schema := newPostgresSchema(t)
	if !strings.Contains(other, schema) {
		t.Fatalf("schema URL %q does not name its schema", other)
	}
	log := &logBuffer{}
	s := openStore(t, db.Config{DatabaseURL: base, ListenURL: other, Logger: slog.New(slog.NewTextHandler(log, nil))})
	seedOrg(t, s, "a", "amy", "bob")
	wake := subscribe(t, s, "a", "bob")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(log.String(), "fall back to the 5 s poll") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	got := log.String()
	if !strings.Contains(got, "fall back to the 5 s poll") || !strings.Contains(got, "CTALK_LISTEN_DATABASE_URL") {
		t.Fatalf("no warning that wake-ups fall back to the poll, naming CTALK_LISTEN_DATABASE_URL, within 10s; log:\n%s", got)
	}
	if u, _ := url.Parse(base); u != nil && u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" && strings.Contains(got, p) {
			t.Errorf("the log holds the database password:\n%s", got)
		}
	}
	settle(wake)
	askAndNotify(t, s, "a", "amy", "bob", "heard by the poll")
	if !woken(wake, 5*time.Second+2*time.Second) {
		t.Fatalf("subscriber not woken by the fallback poll when LISTEN hears nothing")
	}
}
