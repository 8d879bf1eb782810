package db_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// listEvents reads a user's events in a read-only transaction.
func listEvents(t *testing.T, s db.Store, orgID, userID string, after int64, limit int) []db.Event {
	t.Helper()
	var got []db.Event
	view(t, s, func(q db.Queries) error {
		var err error
		got, err = q.ListEvents(t.Context(), orgID, userID, after, limit)
		return err
	})
	return got
}

// asked and answered are the events a stored message makes.
func asked(m db.Message, askerName string) db.Event {
	return db.Event{
		Kind: db.EventQuestion, Seq: m.AskedSeq, MessageID: m.ID, FromUserID: m.FromUserID, ToUserID: m.ToUserID,
		Question: m.Question, AskedAt: m.AskedAt, AnswerText: m.AnswerText, AnsweredAt: m.AnsweredAt, OtherName: askerName,
		ThreadID: m.ThreadID,
	}
}

func answered(m db.Message, answererName string) db.Event {
	e := asked(m, answererName)
	e.Kind, e.Seq = db.EventAnswer, *m.AnsweredSeq
	return e
}

func TestListEvents(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		seedOrg(t, s, "a", "amy", "bob", "cal")
		seedOrg(t, s, "b", "amy", "bob")

		q1 := ask(t, s, "a", "amy", "bob", "amy asks bob", t0)                    // seq 1: bob's
		q2 := ask(t, s, "a", "bob", "amy", "bob asks amy", t0.Add(time.Second))   // seq 2: amy's
		q1 = answer(t, s, q1, "bob answers amy", t0.Add(2*time.Second))           // seq 3: amy's
		q3 := ask(t, s, "a", "cal", "bob", "cal asks bob", t0.Add(3*time.Second)) // seq 4: bob's
		ask(t, s, "b", "amy", "bob", "other org", t0)                             // org b: invisible in a

		amy := []db.Event{asked(q2, "Name of bob"), answered(q1, "Name of bob")}
		if diff := cmp.Diff(amy, listEvents(t, s, "a", "amy", 0, 10)); diff != "" {
			t.Errorf(`ListEvents("a", "amy", 0) mismatch (-want +got):\n%s`, diff)
		}
		// An answered question is still the event of being asked, now showing its answer.
		bob := []db.Event{asked(q1, "Name of amy"), asked(q3, "Name of cal")}
		if diff := cmp.Diff(bob, listEvents(t, s, "a", "bob", 0, 10)); diff != "" {
			t.Errorf(`ListEvents("a", "bob", 0) mismatch (-want +got):\n%s`, diff)
		}

		// The cursor pages in sequence order.
		for _, tc := range []struct {
			user  string
			after int64
			limit int
			want  []db.Event
		}{
			{"amy", 0, 1, amy[:1]},
			{"amy", 2, 10, amy[1:]},
			{"amy", 3, 10, nil},
			{"bob", 1, 10, bob[1:]},
			{"cal", 0, 10, nil}, // cal asked but has no answer yet
			{"nobody", 0, 10, nil},
		} {
			got := listEvents(t, s, "a", tc.user, tc.after, tc.limit)
			if diff := cmp.Diff(tc.want, got, cmpEmpty); diff != "" {
				t.Errorf("ListEvents(a, %s, %d, %d) mismatch (-want +got):\n%s", tc.user, tc.after, tc.limit, diff)
			}
		}
		if got := listEvents(t, s, "b", "bob", 0, 10); len(got) != 1 || got[0].Question != "other org" {
			t.Errorf(`ListEvents("b", "bob", 0) = %+v, want only org b's question`, got)
		}
	})
}

// cmpEmpty treats nil and empty slices alike.
var cmpEmpty = cmp.Comparer(func(a, b []db.Event) bool { return cmp.Equal(a, b) || len(a) == 0 && len(b) == 0 })

// subscribe wakes on orgID/userID's events until the test ends.
func subscribe(t *testing.T, s db.Store, orgID, userID string) <-chan struct{} {
	t.Helper()
	wake, cancel := s.Subscribe(t.Context(), orgID, userID)
	t.Cleanup(cancel)
	return wake
}

// askAndNotify stores a question the way ask_person does, NotifyEvent included.
func askAndNotify(t *testing.T, s db.Store, orgID, from, to, question string) {
	t.Helper()
	mustTx(t, s, func(q db.Queries) error {
		id, seq, err := q.AllocateMessage(t.Context(), orgID)
		if err != nil {
			return err
		}
		m := db.Message{OrgID: orgID, ID: id, FromUserID: from, ToUserID: to, Question: question, AskedAt: t0, AskedSeq: seq}
		if err := q.CreateMessage(t.Context(), m); err != nil {
			return err
		}
		return q.NotifyEvent(t.Context(), orgID, to, seq)
	})
}

// woken reports whether wake fires within d.
func woken(wake <-chan struct{}, d time.Duration) bool {
	select {
	case <-wake:
		return true
	case <-time.After(d):
		return false
	}
}

// settle drains wake-ups that subscribing itself may cause (PostgreSQL wakes
// everyone once its LISTEN connection is up), so later checks see only
// what the test does.
func settle(wakes ...<-chan struct{}) {
	time.Sleep(300 * time.Millisecond)
	for _, w := range wakes {
		select {
		case <-w:
		default:
		}
	}
}

func TestNotifyWakesOnlyTheUser(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		seedOrg(t, s, "a", "amy", "bob")
		bobWake, bobCancel := s.Subscribe(t.Context(), "a", "bob")
		defer bobCancel()
		amyWake := subscribe(t, s, "a", "amy")
		settle(bobWake, amyWake)

		start := time.Now()
		askAndNotify(t, s, "a", "amy", "bob", "hello")
		if !woken(bobWake, time.Second) {
			t.Fatalf("bob's subscriber was not woken within 1s of a question to bob")
		}
		t.Logf("%s: wake-up %v after the question was asked", s.Backend(), time.Since(start))
		if woken(amyWake, 300*time.Millisecond) {
			t.Errorf("amy's subscriber was woken by a question to bob")
		}

		// A rolled-back transaction notifies nobody.
		err := inTx(t, s, func(q db.Queries) error {
			if err := q.NotifyEvent(t.Context(), "a", "bob", 99); err != nil {
				return err
			}
			return errors.New("roll back")
		})
		if err == nil {
			t.Fatal("InTx returned nil, want the rollback error")
		}
		if woken(bobWake, 300*time.Millisecond) {
			t.Errorf("a rolled-back NotifyEvent woke bob's subscriber")
		}

		// After cancel, no more wake-ups arrive.
		bobCancel()
		askAndNotify(t, s, "a", "amy", "bob", "again")
		if woken(bobWake, 300*time.Millisecond) {
			t.Errorf("a cancelled subscription was woken")
		}
	})
}

// TestNotifyAcrossStores opens the same database twice, as two replicas do:
// a question committed through one wakes a subscriber of the other. On
// PostgreSQL that is NOTIFY, within a second; two SQLite stores share no
// memory, so there the fallback poll finds it.
func TestNotifyAcrossStores(t *testing.T) {
	t.Parallel()
	forEachConfig(t, func(t *testing.T, cfg db.Config) {
		waiterStore, askerStore := openStore(t, cfg), openStore(t, cfg)
		seedOrg(t, askerStore, "a", "amy", "bob")
		wake := subscribe(t, waiterStore, "a", "bob")
		settle(wake)

		within := time.Second
		if waiterStore.Backend() == "sqlite" {
			within = 5*time.Second + 2*time.Second // the fallback poll, plus slack
		}
		start := time.Now()
		askAndNotify(t, askerStore, "a", "amy", "bob", "from the other replica")
		if !woken(wake, within) {
			t.Fatalf("subscriber on one store not woken within %v of a question committed through another", within)
		}
		t.Logf("%s: cross-store wake-up after %v", waiterStore.Backend(), time.Since(start))
	})
}

// TestFallbackPollFindsUnannouncedEvents commits an event without
// NotifyEvent (a writer from before this feature, or a lost notification):
// the subscriber still wakes, within the fallback poll.
func TestFallbackPollFindsUnannouncedEvents(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		seedOrg(t, s, "a", "amy", "bob")
		wake := subscribe(t, s, "a", "bob")
		// Let the poll observe the organization once, so the next change is news.
		time.Sleep(5*time.Second + 500*time.Millisecond)
		settle(wake)

		start := time.Now()
		ask(t, s, "a", "amy", "bob", "no notification", t0) // no NotifyEvent
		if !woken(wake, 5*time.Second+2*time.Second) {
			t.Fatalf("subscriber not woken by the fallback poll after an unannounced event")
		}
		t.Logf("%s: fallback poll woke the subscriber after %v", s.Backend(), time.Since(start))
	})
}

// TestSubscriptionsLeakNothing subscribes many waiters, ends them (half by
// their context, half by cancel), and checks that no goroutine and no
// database connection stays behind, and that none is held while waiting.
//
// Not parallel, and one backend at a time: it counts the whole process's
// goroutines.
func TestSubscriptionsLeakNothing(t *testing.T) {
	const waiters = 1000
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) { subscriptionsLeakNothing(t, newConfig(t, backend), waiters) })
	}
}

func subscriptionsLeakNothing(t *testing.T, cfg db.Config, waiters int) {
	var appName string
	if cfg.DatabaseURL != "" {
		cfg.DatabaseURL, appName = dbtest.WithAppName(t, cfg.DatabaseURL)
	}
	s := openStore(t, cfg)
	seedOrg(t, s, "a", "amy", "bob")
	// The first subscription starts the background work (the poll, the
	// LISTEN connection); it lives as long as the store.
	_, cancel := s.Subscribe(t.Context(), "a", "bob")
	cancel()
	time.Sleep(200 * time.Millisecond)
	before := runtime.NumGoroutine()

	ctx, cancelAll := context.WithCancel(t.Context())
	var wakes []<-chan struct{}
	var cancels []func()
	for i := range waiters {
		wake, cancel := s.Subscribe(ctx, "a", "bob")
		wakes = append(wakes, wake)
		if i%2 == 0 {
			cancels = append(cancels, cancel)
		}
	}
	open, inUse := s.Connections()
	t.Logf("%s: %d waiters subscribed: pool has %d connections open, %d in use", s.Backend(), waiters, open, inUse)
	if inUse != 0 {
		t.Errorf("%d pooled connections in use while %d waiters wait, want 0", inUse, waiters)
	}
	if appName != "" {
		total, busy := dbtest.Connections(t, cfg.DatabaseURL, appName)
		t.Logf("postgres: the server sees %d connections (the pool's and the LISTEN one), %d busy", total, busy)
		if busy != 0 || total > open+1 {
			t.Errorf("server sees %d connections, %d busy; want at most %d (pool + LISTEN), none busy", total, busy, open+1)
		}
	}
	if got := runtime.NumGoroutine(); got > before+10 {
		t.Errorf("goroutines while %d waiters wait = %d, want about %d: subscriptions must not need a goroutine each", waiters, got, before)
	}
	askAndNotify(t, s, "a", "amy", "bob", "wake everyone")
	var wg sync.WaitGroup
	missed := 0
	var mu sync.Mutex
	for _, w := range wakes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !woken(w, 2*time.Second) {
				mu.Lock()
				missed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if missed > 0 {
		t.Errorf("%d of %d subscribers were not woken by one event", missed, waiters)
	}
	for _, c := range cancels {
		c()
	}
	cancelAll()

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := runtime.NumGoroutine(); got > before {
		t.Errorf("goroutines after cancelling %d waiters = %d, want at most %d", waiters, got, before)
	}
}

// TestListenerReconnects kills PostgreSQL's LISTEN connection: the store
// reconnects, wakes every subscriber (notifications sent while it was gone
// are lost), and later questions wake their waiters again at once.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	dbURL, _ := newPostgresSchema(t)
	dbURL, app := dbtest.WithAppName(t, dbURL)
	s := openStore(t, db.Config{DatabaseURL: dbURL})
	seedOrg(t, s, "a", "amy", "bob")
	wake := subscribe(t, s, "a", "bob")
	settle(wake)

	var killed int
	err := pgConn(t, dbURL).QueryRow(t.Context(), `
		SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND query LIKE 'LISTEN %'`, app).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminate the LISTEN connection: killed %d, %v; want 1", killed, err)
	}
	start := time.Now()
	if !woken(wake, 3*time.Second) {
		t.Fatalf("subscriber not woken within 3s of losing the LISTEN connection")
	}
	t.Logf("reconnected and woke subscribers %v after the connection was killed", time.Since(start).Round(time.Millisecond))
	settle(wake)
	start = time.Now()
	askAndNotify(t, s, "a", "amy", "bob", "after the reconnect")
	if !woken(wake, time.Second) {
		t.Fatalf("subscriber not woken within 1s of a question after the reconnect")
	}
	t.Logf("wake-up %v after a question, after the reconnect", time.Since(start).Round(time.Millisecond))
}
