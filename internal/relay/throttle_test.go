package relay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

func lockedMsg(seconds int) string {
	return fmt.Sprintf("too many failed password attempts: retry in %d s", seconds)
}

// wantLocked runs call, which must be refused as locked for seconds without hashing.
func (f *fixture) wantLocked(seconds int, name string, call func() error) {
	f.t.Helper()
	err, n := f.hashed(call)
	var re *Error
	if !errors.As(err, &re) || re.Kind != KindThrottled || err.Error() != lockedMsg(seconds) || n != 0 {
		f.t.Errorf("%s while locked = %v, %d hashes; want %q and 0 hashes", name, err, n, lockedMsg(seconds))
	}
}

// wantHashed runs call, which must succeed (or fail, if !ok) with exactly n hashes.
func (f *fixture) wantHashed(ok bool, n int64, name string, call func() error) {
	f.t.Helper()
	err, got := f.hashed(call)
	if (err == nil) != ok || got != n {
		f.t.Errorf("%s = %v, %d hashes; want success %v, %d hashes", name, err, got, ok, n)
	}
}

// TestThrottleLoginNoHashing: a locked account is refused without hashing,
// even for the right password; the lock expires after the backoff, which
// doubles with further failures, and a success forgets the failures.
func TestThrottleLoginNoHashing(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "umar", "john")
		token := f.login("acme", "umar")
		login := func(user, pw string) func() error {
			return func() error {
				_, err := f.s.Login(t.Context(), "acme", user, pw)
				return err
			}
		}
		fail := func(n int) {
			t.Helper()
			for i := range n {
				f.wantHashed(false, 1, "login", login("umar", "wrong-password-"+strconv.Itoa(i)))
			}
		}
		change := func() error {
			_, err := f.s.ChangePassword(t.Context(), Credentials{Token: token}, testUserPassword, "another-password-1")
			return err
		}

		fail(accountFreeFailures)
		f.wantLocked(2, "login", login("umar", testUserPassword))
		f.wantLocked(2, "change_password", change)
		f.wantHashed(true, 1, "login", login("john", testUserPassword)) // another user of the org
		f.advance(time.Second)
		f.wantLocked(1, "login", login("umar", testUserPassword))
		f.advance(time.Second)
		f.wantHashed(true, 1, "login", login("umar", testUserPassword)) // the lock is over

		// The success cleared the failures: the free ones are free again.
		fail(accountFreeFailures - 1)
		f.wantHashed(true, 1, "login", login("umar", testUserPassword))

		// Past the free failures each one doubles the wait.
		fail(accountFreeFailures)
		f.advance(2 * time.Second)
		fail(1)
		f.wantLocked(4, "login", login("umar", testUserPassword))
		f.advance(4 * time.Second)
		f.wantHashed(true, 2, "change_password", change) // verify the old password, hash the new one
	})
}

// TestThrottleAdminNoHashing: a locked admin password is refused by every
// admin tool without hashing; other organizations are unaffected.
func TestThrottleAdminNoHashing(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "john")
		f.org("other")
		ctx := t.Context()
		register := func(org, pw string) func() error {
			return func() error {
				_, err := f.s.RegisterUser(ctx, Admin{OrgID: org, Password: pw},
					NewUser{UserID: "eve", Name: "Eve", Password: testUserPassword, Ownership: "x"})
				return err
			}
		}
		acme := Admin{OrgID: "acme", Password: testAdminPassword}

		for i := range accountFreeFailures {
			f.wantHashed(false, 1, "register_user", register("acme", "wrong-admin-"+strconv.Itoa(i)))
		}
		for name, call := range map[string]func() error{
			"register_user": register("acme", testAdminPassword),
			"update_user_profile_notes": func() error {
				_, err := f.s.UpdateUserProfileNotes(ctx, acme, "john", "notes")
				return err
			},
			"reset_user_password": func() error {
				_, err := f.s.ResetUserPassword(ctx, acme, "john", "another-password-1")
				return err
			},
			"deactivate_user": func() error { _, err := f.s.DeactivateUser(ctx, acme, "john"); return err },
			"reactivate_user": func() error { _, err := f.s.ReactivateUser(ctx, acme, "john"); return err },
		} {
			f.wantLocked(2, name, call)
		}
		f.wantHashed(true, 2, "register_user", register("other", testAdminPassword))
		f.advance(2 * time.Second)
		f.wantHashed(true, 2, "register_user", register("acme", testAdminPassword))
	})
}

// TestThrottleAddressNoHashing: failures spread over many accounts lock the
// address they came from, without hashing, and no other address.
func TestThrottleAddressNoHashing(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "john")
		guesser := WithClientAddr(t.Context(), "203.0.113.9")
		neighbour := WithClientAddr(t.Context(), "203.0.113.10")
		login := func(ctx context.Context, user, pw string) (int64, error) {
			err, n := f.hashed(func() error {
				_, err := f.s.Login(ctx, "acme", user, pw)
				return err
			})
			return n, err
		}

		for i := range addrFreeFailures {
			if n, err := login(guesser, "guess-"+strconv.Itoa(i), "wrong-password"); !errors.Is(err, errBadLogin) || n != 1 {
				t.Fatalf("failed login %d from one address = %v, %d hashes; want %v, 1 hash", i+1, err, n, errBadLogin)
			}
		}
		if n, err := login(guesser, "john", testUserPassword); err == nil || err.Error() != lockedMsg(2) || n != 0 {
			t.Errorf("login(john) from the locked address = %v, %d hashes; want %q, 0 hashes", err, n, lockedMsg(2))
		}
		if n, err := login(neighbour, "john", testUserPassword); err != nil || n != 1 {
			t.Errorf("login(john) from another address = %v, %d hashes; want success, 1 hash", err, n)
		}
		f.advance(2 * time.Second)
		if n, err := login(guesser, "john", testUserPassword); err != nil || n != 1 {
			t.Errorf("login(john) from the guessing address after its lock = %v, %d hashes; want success, 1 hash", err, n)
		}
	})
}

// TestThrottleConcurrentGuesses: guesses sent at once get no more hashes
// than guesses sent one after another: every attempt beyond the free
// failures is refused without hashing, however many are in flight.
func TestThrottleConcurrentGuesses(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "john")
		const guesses = 4 * accountFreeFailures
		errs := make([]error, guesses)
		before := f.s.PasswordHashes()
		var wg sync.WaitGroup
		for i := range guesses {
			wg.Go(func() {
				_, errs[i] = f.s.Login(t.Context(), "acme", "john", "guess-"+strconv.Itoa(i))
			})
		}
		wg.Wait()
		hashes := f.s.PasswordHashes() - before
		wrong, refused := 0, 0
		for i, err := range errs {
			switch {
			case errors.Is(err, errBadLogin):
				wrong++
			case err != nil && strings.HasPrefix(err.Error(), "too many failed password attempts"):
				refused++
			default:
				t.Errorf("concurrent wrong login %d = %v, want %v or a throttle refusal", i, err, errBadLogin)
			}
		}
		if hashes > accountFreeFailures {
			t.Errorf("%d concurrent wrong logins for one account ran %d password hashes (%d refused as throttled); want at most %d",
				guesses, hashes, refused, accountFreeFailures)
		}
		// Every wrong password that was checked is counted: concurrent
		// failures must not overwrite each other's count.
		var rows []db.Throttle
		if err := s.View(t.Context(), func(q db.Queries) (err error) {
			rows, err = q.GetThrottles(t.Context(), userKey("acme", "john"), "")
			return err
		}); err != nil || len(rows) != 1 {
			t.Fatalf("GetThrottles(acme/john) = %+v, %v; want one row", rows, err)
		}
		if rows[0].Failures != int64(wrong) {
			t.Errorf("after %d concurrent wrong passwords were checked, the account's failure count is %d, want %d", wrong, rows[0].Failures, wrong)
		}
		// However they were counted, the account has failed more than its
		// free failures: the right password must wait.
		if _, err := f.s.Login(t.Context(), "acme", "john", testUserPassword); err == nil ||
			!strings.HasPrefix(err.Error(), "too many failed password attempts") {
			t.Errorf("login(right password) after %d concurrent failures = %v, want it refused as throttled", guesses, err)
		}
	})
}
