package relay

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// openWaits starts n waits for cred on s that last until cancel, and
// returns once s counts them all open.
func openWaits(t *testing.T, s *Service, cred Credentials, user string, n int) (cancel func(), done *sync.WaitGroup) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done = &sync.WaitGroup{}
	mine, _ := s.waits.open(user)
	for range n {
		done.Go(func() {
			timeout := float64(MaxWaitSeconds)
			if _, err := s.Wait(ctx, cred, "latest", &timeout); !errors.Is(err, context.Canceled) {
				t.Errorf("held wait ended with %v, want it cancelled", err)
			}
		})
	}
	waitOpen(t, s, user, mine+n)
	return cancel, done
}

// waitOpen polls until s counts want open waits for user.
func waitOpen(t *testing.T, s *Service, user string, want int) {
	t.Helper()
	for range 2000 {
		if got, _ := s.waits.open(user); got == want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	got, _ := s.waits.open(user)
	t.Fatalf("%s has %d open waits, want %d", user, got, want)
}

// TestWaitCaps: a user's ninth concurrent wait is refused at once with a
// message that says why, another user still waits and gets their event,
// and closing one wait lets the first user open another. The process cap
// refuses anyone once full. Both backends.
func TestWaitCaps(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f, umar, john := umarAndJohn(t, s)
		ctx := t.Context()
		long := float64(MaxWaitSeconds)

		cancelMost, most := openWaits(t, f.s, umar, "acme/umar", DefaultMaxWaitsPerUser-1)
		cancelLast, last := openWaits(t, f.s, umar, "acme/umar", 1)
		_, err := f.s.Wait(ctx, umar, "latest", &long)
		var re *Error
		want := "too many open waits for you: 8 already wait; close one or retry in a few seconds"
		if !errors.As(err, &re) || re.Kind != KindThrottled || err.Error() != want {
			t.Fatalf("ninth wait = %v, want %q", err, want)
		}

		// john is not held up by umar's waits.
		var (
			johns WaitResult
			jerr  error
			jwg   sync.WaitGroup
		)
		jwg.Go(func() { johns, jerr = f.s.Wait(ctx, john, "latest", &long) })
		waitOpen(t, f.s, "acme/john", 1)
		if _, err := f.s.Ask(ctx, umar, "john", "Are you there?"); err != nil {
			t.Fatal(err)
		}
		jwg.Wait()
		if jerr != nil || len(johns.Events) != 1 || johns.Events[0].Question != "Are you there?" {
			t.Errorf("john's wait while umar is at the cap = %+v, %v; want the question", johns, jerr)
		}

		// One of umar's waits closes: he can open another, and no more.
		cancelLast()
		last.Wait()
		waitOpen(t, f.s, "acme/umar", DefaultMaxWaitsPerUser-1)
		cancelLast, last = openWaits(t, f.s, umar, "acme/umar", 1)
		if _, err := f.s.Wait(ctx, umar, "latest", &long); err == nil || err.Error() != want {
			t.Errorf("ninth wait again = %v, want %q", err, want)
		}
		cancelLast()
		cancelMost()
		last.Wait()
		most.Wait()

		// The process cap: a second Service over the same store, capped at 2.
		small := New(s, Options{MaxWaits: 2, Now: f.s.now})
		cancelSmall, smallHeld := openWaits(t, small, umar, "acme/umar", 2)
		_, err = small.Wait(ctx, john, "latest", &long)
		if !errors.As(err, &re) || re.Kind != KindThrottled || !strings.HasPrefix(err.Error(), "ctalk has too many open waits (2)") {
			t.Errorf("wait past the process cap = %v, want refused as too many open waits", err)
		}
		cancelSmall()
		smallHeld.Wait()
		if mine, total := small.waits.open("acme/umar"); mine != 0 || total != 0 {
			t.Errorf("after every wait closed: %d of umar's and %d in all still counted, want 0", mine, total)
		}
	})
}
