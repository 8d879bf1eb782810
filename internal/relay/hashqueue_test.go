package relay

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// wantBusy checks err is the expected, throttled refusal want.
func wantBusy(t *testing.T, name string, err error, want string) {
	t.Helper()
	var re *Error
	if !errors.As(err, &re) || re.Kind != KindThrottled || err.Error() != want {
		t.Errorf("%s = %v, want %q", name, err, want)
	}
}

// TestHashQueueBounded: a check that finds no free slot within the wait is
// refused as busy without hashing, and so is one that finds the queue
// already holding as many waiters as could be served; once a slot frees,
// checks hash again.
func TestHashQueueBounded(t *testing.T) {
	t.Parallel()
	h := newHasher(1, 20*time.Millisecond)
	encoded := mustHash(t, h, "right password")
	h.slots <- struct{}{} // a hash in progress that outlasts the wait
	runs := h.runs.Load()
	_, err := h.Verify(t.Context(), encoded, "right password")
	wantBusy(t, "Verify with every slot taken", err, "ctalk is busy checking other passwords: retry in 1 s")
	h.waiting.Store(waitersPerSlot) // the queue is full
	_, err = h.Hash(t.Context(), "new password")
	wantBusy(t, "Hash with the queue full", err, "ctalk is busy checking other passwords: retry in 1 s")
	if h.runs.Load() != runs {
		t.Errorf("refused checks hashed %d times, want 0", h.runs.Load()-runs)
	}
	h.waiting.Store(0)
	h.release()
	if ok, err := h.Verify(t.Context(), encoded, "right password"); !ok || err != nil {
		t.Errorf("Verify once the slot is free = %v, %v; want true, nil", ok, err)
	}
	if def := newHasher(1, 0); def.wait != hashWait {
		t.Errorf("default hash wait %v, want %v", def.wait, hashWait)
	}
}

// inQueue is how many checks from key are in progress or waiting.
func (h *hasher) inQueue(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.turns[key]; t != nil {
		return t.users
	}
	return 0
}

// TestOnePasswordCheckPerAddress: while a password check from an address is
// in progress, another from the same address waits, and past the wait is
// refused as busy without hashing or counting; other addresses are not held
// up; a call's own check-then-hash (register_user, reset) holds one place
// and is not refused by itself. Both backends.
func TestOnePasswordCheckPerAddress(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "umar")
		flood := WithClientAddr(t.Context(), "203.0.113.9")
		other := WithClientAddr(t.Context(), "198.51.100.4")
		f.s.hash.wait = 50 * time.Millisecond

		_, release, err := f.s.passwordTurn(flood) // a check from flood in progress
		if err != nil {
			t.Fatal(err)
		}
		err, n := f.hashed(func() error { _, err := f.s.Login(flood, "acme", "umar", testUserPassword); return err })
		wantBusy(t, "second login from one address", err, "ctalk is busy checking other passwords: retry in 1 s")
		if n != 0 {
			t.Errorf("the refused login hashed %d times, want 0", n)
		}
		f.wantHashed(true, 1, "login from another address", func() error {
			_, err := f.s.Login(other, "acme", "umar", testUserPassword)
			return err
		})
		// A check that waits for the address's turn gets it when the one in
		// progress ends.
		f.s.hash.wait = time.Minute
		waited := make(chan error)
		go func() {
			_, err := f.s.Login(flood, "acme", "umar", testUserPassword)
			waited <- err
		}()
		for f.s.hash.inQueue(addrKey(flood)) < 2 { // until the login waits
			time.Sleep(time.Millisecond)
		}
		release()
		if err := <-waited; err != nil {
			t.Errorf("login waiting for its address's turn = %v, want success", err)
		}

		f.wantHashed(true, 1, "login once the first check is over", func() error {
			_, err := f.s.Login(flood, "acme", "umar", testUserPassword)
			return err
		})
		acme := Admin{OrgID: "acme", Password: testAdminPassword}
		f.wantHashed(true, 2, "register_user (check, then hash)", func() error {
			_, err := f.s.RegisterUser(flood, acme, NewUser{UserID: "john", Name: "John", Password: testUserPassword})
			return err
		})
		f.wantHashed(true, 2, "reset_user_password (check, then hash)", func() error {
			_, err := f.s.ResetUserPassword(flood, acme, "john", "another-password-2")
			return err
		})
		john, err := f.s.Login(other, "acme", "john", "another-password-2")
		if err != nil {
			t.Fatal(err)
		}
		f.wantHashed(true, 2, "change_password (check, then hash)", func() error {
			_, err := f.s.ChangePassword(flood, Credentials{Token: john.AuthToken}, "another-password-2", "another-password-3")
			return err
		})
		if n := len(f.s.hash.turns); n != 0 {
			t.Errorf("%d addresses still hold a place in the password queue, want none", n)
		}
	})
}

// TestRegistrationThrottle: registering organizations is counted per
// address before the admin password is hashed: registerFree in a row, then
// a doubling backoff refused without hashing; other addresses are not
// affected. Both backends.
func TestRegistrationThrottle(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newFixture(t, s)
		busy := WithClientAddr(t.Context(), "203.0.113.50")
		n := 0
		register := func(ctx context.Context) func() error {
			return func() error {
				n++
				_, err := f.s.RegisterOrganization(ctx, NewOrganization{
					OrgID: fmt.Sprintf("org-%d", n), Name: "Org", AdminPassword: testAdminPassword})
				return err
			}
		}
		for range registerFree {
			f.wantHashed(true, 1, "registration within the budget", register(busy))
		}
		refused := func(seconds int) {
			t.Helper()
			err, hashes := f.hashed(register(busy))
			wantBusy(t, "registration past the budget", err,
				fmt.Sprintf("too many organizations registered from your address: retry in %d s", seconds))
			if hashes != 0 {
				t.Errorf("the refused registration hashed %d times, want 0", hashes)
			}
		}
		refused(2)
		f.wantHashed(true, 1, "registration from another address", register(WithClientAddr(t.Context(), "198.51.100.1")))
		f.advance(2 * time.Second)
		f.wantHashed(true, 1, "registration after the backoff", register(busy))
		refused(4) // the backoff doubles
	})
}
