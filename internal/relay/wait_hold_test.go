package relay

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestHeldWaits: a wait run with a Hold returns at once where it would
// block, and counts against the caps until it ends; blocking on the hold
// and running it again carries it on to its event, its cancellation or the
// drain; Close releases one that is never run again. Both backends.
func TestHeldWaits(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		draining := make(chan struct{})
		f, umar, john := umarAndJohn(t, s)
		svc := New(s, Options{Now: f.s.now, Draining: draining})
		long := float64(MaxWaitSeconds)

		// held starts a held wait for cred and checks it was left in its hold.
		held := func(ctx context.Context, cred Credentials) (*Hold, context.Context) {
			t.Helper()
			h := NewHold(ctx)
			hctx := WithHold(ctx, h)
			if res, err := svc.Wait(hctx, cred, "latest", &long); !errors.Is(err, ErrHeld) || !h.Held() {
				t.Fatalf("held wait = %+v, %v, held %v; want ErrHeld", res, err, h.Held())
			}
			return h, hctx
		}

		// A held wait counts: with 7 more, umar's ninth is refused.
		h, hctx := held(t.Context(), umar)
		cancelMost, most := openWaits(t, svc, umar, "acme/umar", DefaultMaxWaitsPerUser-1)
		if _, err := svc.Wait(t.Context(), umar, "latest", &long); err == nil || !strings.HasPrefix(err.Error(), "too many open waits for you") {
			t.Errorf("ninth wait beside a held one = %v, want refused", err)
		}
		cancelMost()
		most.Wait()

		// A question wakes it: Block returns, and the next run has the event.
		if _, err := svc.Ask(t.Context(), john, "umar", "Held?"); err != nil {
			t.Fatal(err)
		}
		h.Block(t.Context())
		res, err := svc.Wait(hctx, umar, "latest", &long)
		if err != nil || h.Held() || len(res.Events) != 1 || res.Events[0].Question != "Held?" {
			t.Errorf("held wait after a question = %+v, %v, held %v; want the question", res, err, h.Held())
		}
		h.Close() // already closed: nothing more
		waitOpen(t, svc, "acme/umar", 0)

		// The request goes away: Block returns, and the run ends the wait.
		ctx, cancel := context.WithCancel(t.Context())
		h, hctx = held(ctx, umar)
		cancel()
		h.Block(ctx)
		if _, err := svc.Wait(hctx, umar, "latest", &long); !errors.Is(err, context.Canceled) || h.Held() {
			t.Errorf("held wait after its request ended = %v, held %v; want context.Canceled", err, h.Held())
		}
		waitOpen(t, svc, "acme/umar", 0)

		// Never run again (say, a panic): Close gives back its place.
		h, _ = held(t.Context(), umar)
		waitOpen(t, svc, "acme/umar", 1)
		h.Close()
		waitOpen(t, svc, "acme/umar", 0)

		// The server drains: the held wait ends with its normal empty result.
		h, hctx = held(t.Context(), umar)
		close(draining)
		h.Block(t.Context())
		res, err = svc.Wait(hctx, umar, "latest", &long)
		if err != nil || !res.TimedOut || !strings.Contains(res.NextStep, "restarting") {
			t.Errorf("held wait during a drain = %+v, %v; want timed out, restarting", res, err)
		}
		waitOpen(t, svc, "acme/umar", 0)
	})
}

// TestHeldWaitNotify: a held wait's holder may be told instead of
// blocking (Hold.Notify): the function is called once, on another
// goroutine, for a wake-up, the timeout, the request's end or the drain,
// never before one, and at once when one already came; the next run then
// carries the wait on to that event's result. Both backends.
func TestHeldWaitNotify(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		draining := make(chan struct{})
		f, umar, john := umarAndJohn(t, s)
		svc := New(s, Options{Now: f.s.now, Draining: draining})

		// held starts a held wait of timeout seconds and asks to be told.
		held := func(ctx context.Context, timeout float64) (*Hold, context.Context, chan struct{}) {
			t.Helper()
			h := NewHold(ctx)
			hctx := WithHold(ctx, h)
			if res, err := svc.Wait(hctx, umar, "latest", &timeout); !errors.Is(err, ErrHeld) || !h.Held() {
				t.Fatalf("held wait = %+v, %v, held %v; want ErrHeld", res, err, h.Held())
			}
			told := make(chan struct{}, 2)
			h.Notify(func() { told <- struct{}{} })
			return h, hctx, told
		}
		// toldOnce checks fn was called once within a while, and not again.
		toldOnce := func(what string, told chan struct{}) {
			t.Helper()
			select {
			case <-told:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: the holder was not told within 10 s", what)
			}
			select {
			case <-told:
				t.Errorf("%s: the holder was told twice", what)
			case <-time.After(50 * time.Millisecond):
			}
		}

		// Nothing happens: no event. (PostgreSQL wakes every subscriber once
		// its LISTEN connection is up, since a wake-up only means "look
		// again": the run finds nothing and leaves the wait held again.)
		h, hctx, told := held(t.Context(), MaxWaitSeconds)
		long := float64(MaxWaitSeconds)
		for quiet := false; !quiet; {
			select {
			case <-told:
				if res, err := svc.Wait(hctx, umar, "latest", &long); !errors.Is(err, ErrHeld) || !h.Held() {
					t.Fatalf("told wait with nothing new = %+v, %v, held %v; want it held again", res, err, h.Held())
				}
				h.Notify(func() { told <- struct{}{} })
			case <-time.After(500 * time.Millisecond):
				quiet = true
			}
		}
		// A question: told once, and the run has it.
		if _, err := svc.Ask(t.Context(), john, "umar", "Told?"); err != nil {
			t.Fatal(err)
		}
		toldOnce("a question", told)
		if res, err := svc.Wait(hctx, umar, "latest", &long); err != nil || h.Held() || len(res.Events) != 1 || res.Events[0].Question != "Told?" {
			t.Errorf("told wait after a question = %+v, %v, held %v; want the question", res, err, h.Held())
		}
		waitOpen(t, svc, "acme/umar", 0)

		// The timeout: told, and the run is the timed-out result.
		h, hctx, told = held(t.Context(), 1)
		toldOnce("the timeout", told)
		if res, err := svc.Wait(hctx, umar, "latest", &long); err != nil || h.Held() || !res.TimedOut {
			t.Errorf("told wait after its timeout = %+v, %v, held %v; want timed out", res, err, h.Held())
		}

		// The request ends: told, and the run ends the wait.
		ctx, cancel := context.WithCancel(t.Context())
		h, hctx, told = held(ctx, MaxWaitSeconds)
		cancel()
		toldOnce("the request's end", told)
		if _, err := svc.Wait(hctx, umar, "latest", &long); !errors.Is(err, context.Canceled) || h.Held() {
			t.Errorf("told wait after its request ended = %v, held %v; want context.Canceled", err, h.Held())
		}
		waitOpen(t, svc, "acme/umar", 0)

		// An event before Notify: told at once.
		h, hctx, _ = held(t.Context(), MaxWaitSeconds)
		if _, err := svc.Ask(t.Context(), john, "umar", "Before?"); err != nil {
			t.Fatal(err)
		}
		h.Block(t.Context()) // returns once the wake-up has come
		told = make(chan struct{}, 2)
		h.Notify(func() { told <- struct{}{} })
		toldOnce("an event before Notify", told)
		if res, err := svc.Wait(hctx, umar, "latest", &long); err != nil || len(res.Events) != 1 {
			t.Errorf("told wait after an earlier question = %+v, %v; want it", res, err)
		}

		// The drain: told, and the run is the restarting result.
		h, hctx, told = held(t.Context(), MaxWaitSeconds)
		close(draining)
		toldOnce("the drain", told)
		if res, err := svc.Wait(hctx, umar, "latest", &long); err != nil || !res.TimedOut || !strings.Contains(res.NextStep, "restarting") {
			t.Errorf("told wait during a drain = %+v, %v; want timed out, restarting", res, err)
		}
		waitOpen(t, svc, "acme/umar", 0)
	})
}
