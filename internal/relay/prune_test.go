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
