package db_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestConcurrentAsks: many writers asking at once each get their own
// number, with no gaps, whatever state the prepared statements are in
// (the first calls run before they are ready).
func TestConcurrentAsks(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy", "bob")
		mustTx(t, s, func(q db.Queries) error {
			return q.CreateToken(ctx, db.Token{TokenHash: []byte("amy"), OrgID: "a", UserID: "amy", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
		})
		const writers, each = 12, 10
		var (
			mu  sync.Mutex
			ids []int64
			wg  sync.WaitGroup
		)
		for range writers {
			wg.Go(func() {
				for range each {
					var out db.AskOutcome
					err := s.InTx(ctx, func(q db.Queries) (err error) {
						out, err = q.AskPerson(ctx, db.AskParams{TokenHash: []byte("amy"), ToUserID: "bob", Question: "Why?", At: t0})
						return err
					})
					if err != nil || out.Status != db.Asked {
						t.Errorf("AskPerson = status %d, %v; want asked", out.Status, err)
						return
					}
					mu.Lock()
					ids = append(ids, out.Message.ID)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(ids)
		for i, id := range ids {
			if id != int64(i+1) {
				t.Fatalf("message ids = %v, want 1 to %d once each", ids, writers*each)
			}
		}
	})
}

// TestWriterWaitEndsWithContext: a write transaction waiting for another
// to finish gives up when its context ends, without running, and the next
// writer after the first commits proceeds.
func TestWriterWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	// Only SQLite admits one writer at a time; PostgreSQL's run concurrently.
	s := dbtest.Open(t, newConfig(t, "sqlite"))
	seedOrg(t, s, "a", "amy")
	inside, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- s.InTx(t.Context(), func(q db.Queries) error {
			close(inside)
			<-release
			_, _, err := q.AllocateMessage(t.Context(), "a")
			return err
		})
	}()
	<-inside
	ctx, cancel := context.WithCancel(t.Context())
	waiting := make(chan error)
	ran := false
	go func() {
		waiting <- s.InTx(ctx, func(q db.Queries) error { ran = true; return nil })
	}()
	cancel()
	if err := <-waiting; !errors.Is(err, context.Canceled) || ran {
		t.Errorf("waiting writer after cancel: err %v, ran %v; want context.Canceled without running", err, ran)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("first writer: %v", err)
	}
	mustTx(t, s, func(q db.Queries) error {
		_, _, err := q.AllocateMessage(t.Context(), "a")
		return err
	})
}
