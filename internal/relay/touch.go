package relay

import (
	"context"
	"sync"
	"time"

	"github.com/ctalk/ctalk/db"
)

// When a token was last used, for the tokens pages, is recorded off the
// call's path and at most every touchEvery per token: a call that finds
// the recorded time stale queues the token, and one short-lived goroutine
// writes everything queued in one transaction. Reads stay read-only, and a
// busy token costs one write every few minutes.
const (
	touchEvery = 5 * time.Minute
	// maxTouches bounds the tokens queued at once; beyond it a use goes
	// unrecorded until the token's next call (it is only a display).
	maxTouches = 10_000
)

type touches struct {
	mu      sync.Mutex
	pending map[string]time.Time // token hash → when it was used
	running bool                 // a goroutine is writing them
}

// touch records that tok was used at now, if what is stored is stale.
func (s *Service) touch(hash []byte, lastUsed *time.Time, now time.Time) {
	if lastUsed != nil && now.Sub(*lastUsed) < touchEvery {
		return
	}
	t := &s.touches
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		t.pending = map[string]time.Time{}
	}
	if len(t.pending) >= maxTouches {
		return
	}
	t.pending[string(hash)] = now
	if !t.running {
		t.running = true
		go s.writeTouches()
	}
}

// writeTouches writes the queued uses until none is left.
func (s *Service) writeTouches() {
	t := &s.touches
	for {
		t.mu.Lock()
		batch := t.pending
		t.pending = nil
		if len(batch) == 0 {
			t.running = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		uses := make([]db.TokenUse, 0, len(batch))
		for hash, at := range batch {
			uses = append(uses, db.TokenUse{Hash: []byte(hash), At: at, StaleBefore: at.Add(-touchEvery)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		// A failure (a database away, a store closing) loses only these
		// times: the next use of each token queues it again.
		_ = s.store.TouchTokens(ctx, uses)
		cancel()
	}
}
