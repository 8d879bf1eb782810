package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/mcp"
)

// config is every setting, read from the environment once and validated.
type config struct {
	Port            int
	DatabaseURL     string
	SQLitePath      string
	TokenTTL        time.Duration
	AllowedOrigins  []string
	ShutdownTimeout time.Duration
}

// envHelp documents each environment variable with its default; `ctalk
// --help` prints it and the README repeats it.
const envHelp = `Environment:
  PORT                    port to listen on (default 8000)
  DATABASE_URL            PostgreSQL URL (postgres://user:pass@host:5432/db); unset: SQLite
  RELAY_DB_PATH           SQLite database file when DATABASE_URL is unset (default relay.sqlite3)
  CTALK_TOKEN_TTL         lifetime of a login token, e.g. 720h (default 720h = 30 days)
  CTALK_ALLOWED_ORIGINS   comma-separated browser origins allowed to call /mcp (default: none,
                          except local pages calling a loopback server; clients that send no
                          Origin, such as Claude Code and the SDKs, are unaffected)
  CTALK_SHUTDOWN_TIMEOUT  how long in-flight requests may finish after SIGTERM (default 10s)
`

func loadConfig(getenv func(string) string) (config, error) {
	c := config{
		Port:            8000,
		DatabaseURL:     strings.TrimSpace(getenv("DATABASE_URL")),
		SQLitePath:      strings.TrimSpace(getenv("RELAY_DB_PATH")),
		TokenTTL:        mcp.DefaultTokenTTL,
		ShutdownTimeout: 10 * time.Second,
	}
	if v := strings.TrimSpace(getenv("PORT")); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 || p > 65535 {
			return c, fmt.Errorf("PORT=%q is not a port number: use 1-65535", v)
		}
		c.Port = p
	}
	if c.DatabaseURL != "" {
		if _, err := db.ParsePostgresURL(c.DatabaseURL); err != nil {
			return c, err
		}
	} else {
		if c.SQLitePath == "" {
			c.SQLitePath = "relay.sqlite3"
		}
		if err := checkSQLitePath(c.SQLitePath); err != nil {
			return c, err
		}
	}
	var err error
	if c.TokenTTL, err = duration(getenv, "CTALK_TOKEN_TTL", c.TokenTTL, time.Minute); err != nil {
		return c, err
	}
	if c.ShutdownTimeout, err = duration(getenv, "CTALK_SHUTDOWN_TIMEOUT", c.ShutdownTimeout, 0); err != nil {
		return c, err
	}
	for _, o := range strings.Split(getenv("CTALK_ALLOWED_ORIGINS"), ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return c, fmt.Errorf("CTALK_ALLOWED_ORIGINS: %q is not an origin: use scheme://host[:port], e.g. https://app.example.com", o)
		}
		c.AllowedOrigins = append(c.AllowedOrigins, o)
	}
	return c, nil
}

func duration(getenv func(string) string, name string, def, min time.Duration) (time.Duration, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < min {
		return 0, fmt.Errorf("%s=%q is not a valid duration: use a value such as 720h or 30s (at least %s)", name, v, min)
	}
	return d, nil
}

// checkSQLitePath fails with one actionable line when the file cannot be
// created or written.
func checkSQLitePath(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return fmt.Errorf("RELAY_DB_PATH=%q: directory %q does not exist: create it or choose another path", path, dir)
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("RELAY_DB_PATH=%q is a directory: name a file, e.g. %s", path, filepath.Join(path, "relay.sqlite3"))
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("RELAY_DB_PATH=%q is not writable: fix its permissions or choose another path", path)
		}
		f.Close()
		return nil
	}
	f, err := os.CreateTemp(dir, ".ctalk-write-check-*")
	if err != nil {
		return fmt.Errorf("RELAY_DB_PATH=%q: directory %q is not writable: fix its permissions or choose another path", path, dir)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

func (c config) dbConfig() db.Config {
	return db.Config{DatabaseURL: c.DatabaseURL, SQLitePath: c.SQLitePath}
}

// describeDB names the database in use for the log: the SQLite file's
// absolute path, or PostgreSQL's host, port and database, never a password.
func (c config) describeDB() string {
	if c.DatabaseURL == "" {
		if abs, err := filepath.Abs(c.SQLitePath); err == nil {
			return "sqlite " + abs
		}
		return "sqlite " + c.SQLitePath
	}
	pc, err := db.ParsePostgresURL(c.DatabaseURL)
	if err != nil {
		return "postgres (unparseable DATABASE_URL)"
	}
	cc := pc.ConnConfig
	return fmt.Sprintf("postgres %s:%d/%s", cc.Host, cc.Port, cc.Database)
}
