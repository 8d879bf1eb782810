package server_test

// Tests of wait_for_messages through the real HTTP handler, as replicas run
// it: plain JSON-RPC POSTs to /mcp, one call per request, tokens in the
// Authorization header.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

func TestWaitReturnsWhatIsThere(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		u := relayURL(t, s)
		tok := seedUsers(t, s, "acme", "umar", "john")
		seedUsers(t, s, "other", "john") // another organization's john sees nothing of acme's

		// Nothing yet: timeout 0 only checks.
		got := waitFor(t, u, tok["john"], 0, "")
		if len(got.Events) != 0 || got.Cursor != "0" || got.TimedOut {
			t.Errorf("wait on an empty inbox = %+v, want no events, cursor 0, not timed out", got)
		}

		q1 := askVia(t, u, tok["umar"], "john", "What is the retry logic?")
		q2 := askVia(t, u, tok["umar"], "john", "And the backoff?")
		got = waitFor(t, u, tok["john"], 30, "")
		type ev struct{ Kind, From, Question, Answer string }
		view := func(w waitOut) []ev {
			var out []ev
			for _, e := range w.Events {
				out = append(out, ev{e.Kind, e.From.UserID, e.Question, e.Answer})
			}
			return out
		}
		want := []ev{{"question", "umar", "What is the retry logic?", ""}, {"question", "umar", "And the backoff?", ""}}
		if diff := cmp.Diff(want, view(got)); diff != "" {
			t.Errorf("john's events mismatch (-want +got):\n%s", diff)
		}
		if got.Events[0].MessageID != q1 || got.Events[1].MessageID != q2 || got.Cursor != got.Events[1].Cursor {
			t.Errorf("events %+v cursor %q, want messages %d, %d and the last event's cursor", got.Events, got.Cursor, q1, q2)
		}
		johnCursor := got.Cursor

		answerVia(t, u, tok["john"], q1, "Three attempts.")
		got = waitFor(t, u, tok["umar"], 30, "")
		if diff := cmp.Diff([]ev{{"answer", "john", "What is the retry logic?", "Three attempts."}}, view(got)); diff != "" {
			t.Errorf("umar's events mismatch (-want +got):\n%s", diff)
		}
		// John's cursor is past both questions; the answer he sent is not his event.
		if got := waitFor(t, u, tok["john"], 0, johnCursor); len(got.Events) != 0 || got.Cursor != johnCursor {
			t.Errorf("john waits after his cursor = %+v, want nothing and the same cursor", got)
		}
		// From the start, the answered question says so.
		if got := waitFor(t, u, tok["john"], 0, ""); !got.Events[0].AlreadyAnswered || got.Events[1].AlreadyAnswered {
			t.Errorf("already_answered = %v, %v; want true, false", got.Events[0].AlreadyAnswered, got.Events[1].AlreadyAnswered)
		}
		// "latest" starts after everything so far.
		if got := waitFor(t, u, tok["umar"], 0, "latest"); len(got.Events) != 0 || got.Cursor != "3" {
			t.Errorf(`wait from "latest" = %+v, want nothing and cursor 3 (the organization's last event)`, got)
		}

		// A page holds 20 events and says there is more.
		for i := range 21 {
			askVia(t, u, tok["john"], "umar", fmt.Sprintf("question %d", i))
		}
		page := waitFor(t, u, tok["umar"], 0, got.Cursor)
		if len(page.Events) != 20 || !page.More {
			t.Fatalf("first page: %d events, more=%v; want 20, true", len(page.Events), page.More)
		}
		rest := waitFor(t, u, tok["umar"], 0, page.Cursor)
		if len(rest.Events) != 1 || rest.More || rest.Events[0].Question != "question 20" {
			t.Errorf("second page = %+v, want question 20 alone", rest.Events)
		}

		for _, c := range []string{"abc", "-1", "1.5"} {
			res, err := callTool(t.Context(), u, tok["umar"], "wait_for_messages", map[string]any{"cursor": c, "timeout_seconds": 0})
			if err != nil || !res.IsError {
				t.Errorf("wait with cursor %q = %+v, %v; want an isError result", c, res, err)
			}
		}
		res, err := callTool(t.Context(), u, "", "wait_for_messages", map[string]any{"timeout_seconds": 0})
		if err != nil || !res.IsError {
			t.Errorf("wait without a token = %+v, %v; want an isError result", res, err)
		}
	})
}

func TestWaitTimesOutWithAnEmptyResult(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		u := relayURL(t, s)
		tok := seedUsers(t, s, "acme", "umar", "john")
		askVia(t, u, tok["umar"], "john", "seen already")
		start := time.Now()
		got := waitFor(t, u, tok["john"], 1, "1")
		took := time.Since(start)
		if len(got.Events) != 0 || got.Cursor != "1" || !got.TimedOut {
			t.Errorf("wait that times out = %+v, want no events, cursor 1, timed_out", got)
		}
		if took < time.Second || took > 3*time.Second {
			t.Errorf("a 1 s wait took %v", took)
		}
		// Text numbers work too; more than the bound waits the bound (not checked: 55 s).
		got = mustCall[waitOut](t, u, tok["john"], "wait_for_messages", map[string]any{"timeout_seconds": "0", "cursor": 1})
		if got.Cursor != "1" {
			t.Errorf(`wait with timeout "0" and numeric cursor 1 = %+v, want cursor 1`, got)
		}
	})
}

// TestWaitWakesAcrossReplicas runs two relays: a waiter on one wakes within
// a second when a question (then an answer) is sent through the other. On
// PostgreSQL they are two stores on one database, as two server processes
// are; on SQLite, two handlers over one store in one process.
func TestWaitWakesAcrossReplicas(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		storeA := dbtest.Open(t, cfg)
		storeB := storeA
		if cfg.DatabaseURL != "" {
			storeB = dbtest.Open(t, cfg)
		}
		relayA, relayB := relayURL(t, storeA), relayURL(t, storeB)
		tok := seedUsers(t, storeB, "acme", "umar", "john")

		type waited struct {
			out waitOut
			at  time.Time
			err error
		}
		wait := func(token, cursor string) chan waited {
			ch := make(chan waited, 1)
			go func() {
				res, err := callTool(t.Context(), relayA, token, "wait_for_messages", map[string]any{"timeout_seconds": 20, "cursor": cursor})
				var w waited
				w.at, w.err = time.Now(), err
				if err == nil {
					w.err = json.Unmarshal(res.StructuredContent, &w.out)
				}
				ch <- w
			}()
			return ch
		}
		check := func(ch chan waited, sent time.Time, want string) waitOut {
			t.Helper()
			w := <-ch
			if w.err != nil {
				t.Fatalf("wait: %v", w.err)
			}
			latency := w.at.Sub(sent)
			if len(w.out.Events) != 1 || w.out.Events[0].Kind != want {
				t.Fatalf("wait returned %+v, want one %s", w.out, want)
			}
			t.Logf("%s: %s reached a waiter on the other relay %v after it was sent", storeA.Backend(), want, latency)
			if latency > time.Second {
				t.Errorf("%s reached the waiter after %v, want within 1s", want, latency)
			}
			return w.out
		}

		johnWaits := wait(tok["john"], "")
		time.Sleep(500 * time.Millisecond) // let the waiter settle into waiting
		sent := time.Now()
		id := askVia(t, relayB, tok["umar"], "john", "ping from the other replica")
		check(johnWaits, sent, "question")

		umarWaits := wait(tok["umar"], "latest")
		time.Sleep(500 * time.Millisecond)
		mustCall[map[string]any](t, relayB, tok["john"], "propose_response", map[string]any{"message_id": id, "draft_text": "pong"})
		sent = time.Now()
		mustCall[map[string]any](t, relayB, tok["john"], "send_response", map[string]any{"message_id": id, "final_text": "pong"})
		check(umarWaits, sent, "answer")
	})
}

// TestCancelledWaitsLeakNothing starts many waits, cuts them off (clients
// that disconnect), and checks that goroutines and database connections
// return to where they were, and that no connection is in use while they
// wait.
//
// Not parallel: it counts the goroutines of the whole process.
func TestCancelledWaitsLeakNothing(t *testing.T) {
	const waiters = 200
	forEachBackendInTurn(t, func(t *testing.T, s db.Store, app string) {
		u := relayURL(t, s)
		tok := seedUsers(t, s, "acme", "umar", "john")
		// Warm up: one wait starts the notifier's background work.
		waitFor(t, u, tok["john"], 1, "latest")
		waitClient.CloseIdleConnections()
		before := settleGoroutines(0)

		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for range waiters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				callTool(ctx, u, tok["john"], "wait_for_messages", map[string]any{"timeout_seconds": 50, "cursor": "latest"})
			}()
		}
		settled, peak := quietConnections(s, time.Second)
		during := sample(t, s, app)
		t.Logf("%s: %d waits settled into waiting within %v (pool peak %d connections): %s",
			s.Backend(), waiters, settled.Round(time.Millisecond), peak, during)
		if during.inUse != 0 {
			t.Errorf("%d database connections in use while %d waits wait, want 0", during.inUse, waiters)
		}
		cancel()
		wg.Wait()
		waitClient.CloseIdleConnections()
		after := settleGoroutines(before)
		if after > before {
			t.Errorf("goroutines after cancelling %d waits = %d, want at most %d (before them)", waiters, after, before)
		}
		end := sample(t, s, app)
		t.Logf("%s: after cancelling (%d goroutines before): %s", s.Backend(), before, end)
		if end.inUse != 0 {
			t.Errorf("%d database connections in use after the waits ended, want 0", end.inUse)
		}
	})
}
