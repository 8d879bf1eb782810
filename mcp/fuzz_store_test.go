package mcp

import (
	"path/filepath"
	"testing"

	"github.com/ctalk/ctalk/db"
)

// openFuzzStore opens a fresh SQLite store for a fuzz target.
func openFuzzStore(f *testing.F) db.Store {
	f.Helper()
	s, err := db.Open(f.Context(), db.Config{SQLitePath: filepath.Join(f.TempDir(), "fuzz.sqlite3")})
	if err != nil {
		f.Fatalf("db.Open: %v", err)
	}
	f.Cleanup(func() { s.Close() })
	return s
}
