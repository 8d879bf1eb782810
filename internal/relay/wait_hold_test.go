package relay

import (
	"context"
	"errors"
	"strings"
	"testing"

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
