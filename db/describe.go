package db

import (
	"fmt"
	"os"
	"path/filepath"
)

// CheckSQLitePath fails with one actionable line when the file cannot be
// created or written.
func CheckSQLitePath(path string) error {
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

// Describe names the database for a log line: the SQLite file's absolute
// path, or PostgreSQL's host, port and database, never a password.
func (c Config) Describe() string {
	if c.DatabaseURL == "" {
		if abs, err := filepath.Abs(c.SQLitePath); err == nil {
			return "sqlite " + abs
		}
		return "sqlite " + c.SQLitePath
	}
	pc, err := ParsePostgresURL(c.DatabaseURL)
	if err != nil {
		return "postgres (unparseable DATABASE_URL)"
	}
	cc := pc.ConnConfig
	return fmt.Sprintf("postgres %s:%d/%s", cc.Host, cc.Port, cc.Database)
}
