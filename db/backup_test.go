package db_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestBackupDuringWrites: a SQLite backup taken while questions are being
// asked and answered opens, passes PRAGMA integrity_check (the search index
// too), and holds every question acknowledged before it began; it never
// leaves a partial file under its name, and refuses to overwrite one.
func TestBackupDuringWrites(t *testing.T) {
	t.Parallel()
	cfg := dbtest.NewConfig(t, "sqlite")
	s := dbtest.Open(t, cfg)
	seedOrg(t, s, "a", "amy", "bob")
	ctx, stop := context.WithCancel(t.Context())
	var (
		mu    sync.Mutex
		acked []int64
		wg    sync.WaitGroup
	)
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				var id int64
				err := s.InTx(ctx, func(q db.Queries) error {
					var seq int64
					var err error
					if id, seq, err = q.AllocateMessage(ctx, "a"); err != nil {
						return err
					}
					at := time.Now().UTC()
					if err := q.CreateMessage(ctx, db.Message{OrgID: "a", ID: id, FromUserID: "amy", ToUserID: "bob",
						Question: "retry question", AskedAt: at, AskedSeq: seq}); err != nil {
						return err
					}
					if w == 1 && i%2 == 0 { // answered: the search index is written too
						if seq, err = q.AllocateEvent(ctx, "a"); err != nil {
							return err
						}
						return q.AnswerMessage(ctx, "a", id, "three retries", at, seq, &at)
					}
					return nil
				})
				if err == nil {
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	before := append([]int64(nil), acked...)
	mu.Unlock()
	path := filepath.Join(t.TempDir(), "copy.sqlite3")
	err := s.Backup(t.Context(), path)
	stop()
	wg.Wait()
	if err != nil {
		t.Fatalf("Backup = %v", err)
	}
	if len(before) == 0 {
		t.Fatal("no question was acknowledged before the backup: the load did not run")
	}
	if _, err := os.Stat(path + ".partial"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a .partial file was left beside the backup: %v", err)
	}

	copyDB, err := sql.Open("sqlite3", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer copyDB.Close()
	var check string
	if err := copyDB.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("PRAGMA integrity_check on the backup = %q, %v; want ok", check, err)
	}
	if _, err := copyDB.Exec("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')"); err != nil {
		t.Errorf("the backup's search index fails its integrity check: %v", err)
	}
	missing := 0
	for _, id := range before {
		var n int
		if err := copyDB.QueryRow("SELECT count(*) FROM messages WHERE org_id = 'a' AND id = ?", id).Scan(&n); err != nil || n != 1 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of the %d questions acknowledged before the backup are missing from it", missing, len(before))
	}
	t.Logf("backup holds all %d questions acknowledged before it began", len(before))

	// The copy is a ctalk database: it opens and serves.
	restored := dbtest.Open(t, db.Config{SQLitePath: path})
	if _, err := getMessage(t, restored, "a", before[0]); err != nil {
		t.Errorf("reading the restored copy: %v", err)
	}
	if err := s.Backup(t.Context(), path); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a backup onto an existing file = %v; want refused", err)
	}
}

// TestBackupPostgres: on PostgreSQL ctalk backup says what to use instead.
func TestBackupPostgres(t *testing.T) {
	t.Parallel()
	s := dbtest.Open(t, dbtest.NewConfig(t, "postgres"))
	err := s.Backup(t.Context(), filepath.Join(t.TempDir(), "x"))
	if !errors.Is(err, db.ErrUnsupported) || !strings.Contains(err.Error(), "pg_dump") {
		t.Errorf("Backup on PostgreSQL = %v; want ErrUnsupported naming pg_dump", err)
	}
}
