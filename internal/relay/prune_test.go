package relay

import (
	"errors"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestSignInPrunesExpiredTokens: a token that expired more than a day ago
// is deleted by the next sign-in (login tool or web), whoever's it was; a
// live one stays.
func TestSignInPrunesExpiredTokens(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "umar", "john")
		ctx := t.Context()
		old := f.login("acme", "john")
		f.advance(DefaultTokenTTL + oauthKeep + time.Minute)
		kept := f.login("acme", "john")
		stored := func(tok string) bool {
			err := s.View(ctx, func(q db.Queries) error { _, err := q.GetToken(ctx, hashToken(tok)); return err })
			if err != nil && !errors.Is(err, db.ErrNotFound) {
				t.Fatal(err)
			}
			return err == nil
		}
		if stored(old) {
			t.Error("a token expired for over a day is still stored after a login")
		}
		if !stored(kept) {
			t.Error("a login deleted a live token")
		}
		f.advance(DefaultTokenTTL + oauthKeep + time.Minute)
		f.webSession("acme", "umar", testUserPassword)
		if stored(kept) {
			t.Error("a token expired for over a day is still stored after a web sign-in")
		}
	})
}

// TestTokenLastUsed: a token's last use is recorded (off the call's path)
// by any authenticated call and by ask_person, at most every few minutes,
// and shown on the tokens lists.
func TestTokenLastUsed(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "umar", "john")
		ctx := t.Context()
		john := Credentials{Token: f.login("acme", "john")}
		web := f.webSession("acme", "john", testUserPassword)
		lastUsed := func() *time.Time {
			t.Helper()
			list, err := f.s.ListMyTokens(ctx, web)
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range list.Tokens {
				if tk.ID == tokenPublicID(hashToken(john.Token)) {
					return tk.LastUsedAt
				}
			}
			t.Fatal("john's login token is not listed")
			return nil
		}
		// eventually waits for the goroutine that records uses (no timing is asserted).
		eventually := func(what string, ok func(*time.Time) bool) {
			t.Helper()
			for range 500 {
				if ok(lastUsed()) {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Fatalf("%s: last used = %v", what, lastUsed())
		}
		if got := lastUsed(); got != nil {
			t.Fatalf("a token never used has last used %v", got)
		}
		first := f.s.clock()
		if _, err := f.s.Whoami(ctx, john); err != nil {
			t.Fatal(err)
		}
		eventually("after whoami", func(got *time.Time) bool { return got != nil && got.Equal(first) })

		// Within a few minutes nothing is written again.
		f.advance(time.Minute)
		if _, err := f.s.Whoami(ctx, john); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		if got := lastUsed(); got == nil || !got.Equal(first) {
			t.Errorf("a use a minute later rewrote last used: %v, want %v", got, first)
		}

		// Later, ask_person records the use too.
		f.advance(touchEvery)
		later := f.s.clock()
		if _, err := f.s.Ask(ctx, john, "umar", "When is the deploy?"); err != nil {
			t.Fatal(err)
		}
		eventually("after ask_person", func(got *time.Time) bool { return got != nil && got.Equal(later) })
	})
}
