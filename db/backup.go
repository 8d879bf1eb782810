package db

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrUnsupported means the backend cannot do what was asked; the error's
// text says what to use instead.
var ErrUnsupported = errors.New("not supported by this database")

// Backup writes a consistent copy of the database to path while it keeps
// serving: SQLite's VACUUM INTO reads one snapshot, so every transaction
// committed before it began is in the copy and none after. The copy is
// written beside path, synced, and renamed into place, so path never holds a
// partial copy. path must not exist.
func (s *sqliteStore) Backup(ctx context.Context, path string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("backup: %s already exists: choose a new file name", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if err := checkWritableDir(filepath.Dir(abs)); err != nil {
		return fmt.Errorf("backup: %s: %w", filepath.Dir(abs), err)
	}
	partial := abs + ".partial"
	if err := os.Remove(partial); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("backup: remove the leftover %s: %w", partial, err)
	}
	if _, err := s.db.ExecContext(ctx, "VACUUM INTO ?", partial); err != nil {
		os.Remove(partial)
		return fmt.Errorf("backup: copy the database: %w", sqliteError(err))
	}
	if err := syncFile(partial); err != nil {
		os.Remove(partial)
		return fmt.Errorf("backup: %w", err)
	}
	if err := os.Rename(partial, abs); err != nil {
		os.Remove(partial)
		return fmt.Errorf("backup: %w", err)
	}
	return syncFile(filepath.Dir(abs))
}

// syncFile flushes a file or directory to disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Backup is SQLite's: a PostgreSQL database is backed up by its own tools.
func (s *postgresStore) Backup(context.Context, string) error {
	return fmt.Errorf("%w: ctalk backup copies the SQLite database; this one is PostgreSQL: "+
		"use pg_dump (pg_dump --format=custom \"$DATABASE_URL\" > ctalk.dump) or your provider's backups", ErrUnsupported)
}
