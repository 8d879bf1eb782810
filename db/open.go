package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	ctalksql "github.com/ctalk/ctalk/sql"
)

// Config chooses and configures the backend.
type Config struct {
	// DatabaseURL selects PostgreSQL when set (postgres://…).
	DatabaseURL string
	// ListenURL is a direct (unpooled) PostgreSQL URL of the same database
	// for the one LISTEN connection that wakes waiters; "" uses DatabaseURL.
	// Setting it to another URL also marks DatabaseURL as pooled (see Pooled).
	ListenURL string
	// SQLitePath is the database file used when DatabaseURL is empty.
	SQLitePath string
	// Logger receives migration progress; nil discards it.
	Logger *slog.Logger
}

// Open connects to the configured database and applies pending migrations.
func Open(ctx context.Context, cfg Config) (Store, error) {
	store, m, err := open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := m.Up(ctx); err != nil {
		store.Close()
		return nil, err
	}
	if s, ok := store.(*sqliteStore); ok {
		s.startListing(cfg.Logger)
	}
	return store, nil
}

// Migrator runs the embedded migrations against a database.
type Migrator struct {
	provider *goose.Provider
	close    func() error
}

// OpenMigrator connects to the configured database for `ctalk migrate`.
func OpenMigrator(ctx context.Context, cfg Config) (*Migrator, error) {
	store, m, err := open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	m.close = store.Close
	return m, nil
}

// Up applies every pending migration and returns how many ran.
func (m *Migrator) Up(ctx context.Context) (int, error) {
	res, err := m.provider.Up(ctx)
	if err != nil {
		return 0, fmt.Errorf("apply migrations: %w%s", err, poolerHint(err))
	}
	return len(res), nil
}

// Down rolls back the newest applied migration.
func (m *Migrator) Down(ctx context.Context) (*goose.MigrationResult, error) {
	res, err := m.provider.Down(ctx)
	if err != nil {
		return nil, fmt.Errorf("roll back migration: %w", err)
	}
	return res, nil
}

// DownTo rolls back every applied migration newer than version, newest
// first, and returns the versions rolled back in that order.
func (m *Migrator) DownTo(ctx context.Context, version int64) ([]int64, error) {
	res, err := m.provider.DownTo(ctx, version)
	var done []int64
	for _, r := range res {
		done = append(done, r.Source.Version)
	}
	if err != nil {
		return done, fmt.Errorf("roll back migrations: %w", err)
	}
	return done, nil
}

// Status lists every migration and whether it is applied.
func (m *Migrator) Status(ctx context.Context) ([]*goose.MigrationStatus, error) {
	return m.provider.Status(ctx)
}

// Close releases the database.
func (m *Migrator) Close() error {
	if m.close != nil {
		return m.close()
	}
	return nil
}

func open(ctx context.Context, cfg Config) (Store, *Migrator, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.DatabaseURL != "" {
		return openPostgres(ctx, cfg, logger)
	}
	return openSQLite(ctx, cfg.SQLitePath, logger)
}

// ParsePostgresURL validates a DATABASE_URL without connecting.
func ParsePostgresURL(url string) (*pgxpool.Config, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's message quotes the URL with its password masked.
		return nil, fmt.Errorf("DATABASE_URL is not a valid PostgreSQL URL (postgres://user:password@host:5432/dbname): %w", err)
	}
	return pc, nil
}

func openPostgres(ctx context.Context, cfg Config, logger *slog.Logger) (Store, *Migrator, error) {
	pc, err := ParsePostgresURL(cfg.DatabaseURL)
	if err != nil {
		return nil, nil, err
	}
	pooled := cfg.Pooled()
	if pooled && !strings.Contains(cfg.DatabaseURL, "default_query_exec_mode") {
		// A transaction pooler hands each transaction to any server
		// connection, where pgx's cached named statements do not exist (or
		// already do): send each query unnamed, in one round trip.
		pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	}
	listen := pc.ConnConfig.Copy()
	if cfg.ListenURL != "" && cfg.ListenURL != cfg.DatabaseURL {
		lc, err := ParseListenURL(cfg.ListenURL)
		if err != nil {
			return nil, nil, err
		}
		listen = lc.ConnConfig
		logger.Info("PostgreSQL: DATABASE_URL taken for a transaction pooler; LISTEN on CTALK_LISTEN_DATABASE_URL",
			"listen", fmt.Sprintf("%s:%d/%s", listen.Host, listen.Port, listen.Database))
	} else if pooled {
		logger.Warn("DATABASE_URL looks like a transaction pooler and CTALK_LISTEN_DATABASE_URL is unset: " +
			"LISTEN through a pooler hears nothing, so wake-ups fall back to the 5 s poll; " +
			"set CTALK_LISTEN_DATABASE_URL to the database's direct (unpooled) URL")
	}
	if listen.ConnectTimeout == 0 {
		listen.ConnectTimeout = 5 * time.Second
	}
	if pc.ConnConfig.ConnectTimeout == 0 {
		// Without a bound, a dropped network holds calls for the kernel's
		// TCP timeouts; connect_timeout in the URL overrides this.
		pc.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	pc.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		// pgx scans timestamptz in the machine's zone; ctalk answers in UTC on both backends.
		c.TypeMap().RegisterType(&pgtype.Type{
			Name: "timestamptz", OID: pgtype.TimestamptzOID, Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC},
		})
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("cannot connect to PostgreSQL at %s:%d (%s): check DATABASE_URL and that the server is running",
			pc.ConnConfig.Host, pc.ConnConfig.Port, lastLine(err))
	}
	// A table lock, not goose's advisory (session) lock: session locks leak
	// behind transaction poolers such as Neon's pooled URL, and replicas booting
	// together must still apply each migration once.
	locker, err := lock.NewPostgresTableLocker(lock.WithTableLockTimeout(500*time.Millisecond, 1200))
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	migrations, _ := fs.Sub(ctalksql.Migrations, "postgres/migrations")
	p, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(pool), migrations,
		goose.WithLocker(locker), goose.WithSlog(logger))
	if err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("load migrations: %w", err)
	}
	return &postgresStore{pool: pool, listenConfig: listen, log: logger}, &Migrator{provider: p}, nil
}

// poolerHint says what to do when err is a named prepared statement lost (or
// met again) behind a transaction pooler that ctalk did not recognise.
func poolerHint(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "26000" || pgErr.Code == "42P05") && strings.Contains(pgErr.Message, "prepared statement") {
		return " (DATABASE_URL goes through a transaction pooler: set CTALK_LISTEN_DATABASE_URL to the direct URL of the same database, " +
			"or add default_query_exec_mode=exec to DATABASE_URL)"
	}
	return ""
}

// ParseListenURL validates a CTALK_LISTEN_DATABASE_URL without connecting.
func ParseListenURL(url string) (*pgxpool.Config, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("CTALK_LISTEN_DATABASE_URL is not a valid PostgreSQL URL (postgres://user:password@host:5432/dbname): %w", err)
	}
	return pc, nil
}

// Pooled reports whether DatabaseURL is taken for a transaction pooler
// (PgBouncer, Neon's or Supabase's pooled URL), where a server connection
// serves one transaction and then another client: a ListenURL other than
// DatabaseURL, a pooler's port (6432 PgBouncer, 6543 Supabase) or a host
// naming one ("-pooler." on Neon, "pooler.supabase.com", "pgbouncer").
// Behind a pooler queries go unnamed (pgx's exec mode) unless the URL sets
// default_query_exec_mode itself; direct connections keep pgx's cached
// prepared statements.
func (c Config) Pooled() bool {
	if c.DatabaseURL == "" {
		return false
	}
	if c.ListenURL != "" && c.ListenURL != c.DatabaseURL {
		return true
	}
	pc, err := pgxpool.ParseConfig(c.DatabaseURL)
	if err != nil {
		return false
	}
	cc := pc.ConnConfig
	host := strings.ToLower(cc.Host)
	return cc.Port == 6432 || cc.Port == 6543 || strings.Contains(host, "pooler") || strings.Contains(host, "pgbouncer")
}

func openSQLite(ctx context.Context, path string, logger *slog.Logger) (Store, *Migrator, error) {
	if path == "" {
		return nil, nil, errors.New("no database: set DATABASE_URL or RELAY_DB_PATH")
	}
	if err := checkWritableDir(filepath.Dir(path)); err != nil {
		return nil, nil, fmt.Errorf("RELAY_DB_PATH %q: %w", path, err)
	}
	sdb, err := sql.Open("sqlite3", sqliteDSN(path, false))
	if err != nil {
		return nil, nil, fmt.Errorf("open SQLite database %q: %w", path, err)
	}
	mdb, err := sql.Open("sqlite3", sqliteDSN(path, true))
	if err != nil {
		sdb.Close()
		return nil, nil, fmt.Errorf("open SQLite database %q: %w", path, err)
	}
	// One writer at a time anyway; a few connections serve concurrent
	// readers (WAL) without opening one per waiting request.
	sdb.SetMaxOpenConns(8)
	store := &sqliteStore{db: sdb, migrations: mdb}
	if err := sdb.PingContext(ctx); err != nil {
		store.Close()
		return nil, nil, fmt.Errorf("open SQLite database %q: %w", path, err)
	}
	migrations, _ := fs.Sub(ctalksql.Migrations, "sqlite/migrations")
	p, err := goose.NewProvider(goose.DialectSQLite3, mdb, migrations, goose.WithSlog(logger))
	if err != nil {
		store.Close()
		return nil, nil, fmt.Errorf("load migrations: %w", err)
	}
	return store, &Migrator{provider: p}, nil
}

// lastLine is the innermost cause of a connection error, on one line: pgx
// lists every address it tried on lines of their own.
func lastLine(err error) string {
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if i := strings.LastIndex(last, ": "); i >= 0 && i+2 < len(last) {
		last = last[i+2:]
	}
	return last
}

// checkWritableDir fails early, with a reason a person can act on, when the
// database file's directory is missing or not writable.
func checkWritableDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("directory %q does not exist: create it or choose another path", dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("%q is not a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".ctalk-write-check-*")
	if err != nil {
		return fmt.Errorf("directory %q is not writable: fix its permissions or choose another path", dir)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
