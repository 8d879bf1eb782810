package relay

import (
	"errors"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestRegisteredClientsArePruned: registration needs no account, so a
// client that has not signed anyone in a day after it registered is gone
// at the next registration; a client someone signed in with stays.
func TestRegisteredClientsArePruned(t *testing.T) {
	dbtest.ForEachBackend(t, func(t *testing.T, store db.Store) {
		f := newTeam(t, store, "amy")
		ctx := t.Context()
		unused, err := f.s.RegisterOAuthClient(ctx, "Junk", []string{"http://127.0.0.1:1/cb"})
		if err != nil {
			t.Fatal(err)
		}
		used, err := f.s.RegisterOAuthClient(ctx, "Claude", []string{"https://claude.ai/api/mcp/auth_callback"})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.InTx(ctx, func(q db.Queries) error {
			return q.CreateOAuthGrant(ctx, db.OAuthGrant{ID: "g1", OrgID: "acme", UserID: "amy", ClientID: used.ID,
				ClientName: used.Name, Resource: "https://relay.example/oauth/mcp", Scope: "ctalk", CreatedAt: f.s.clock()})
		}); err != nil {
			t.Fatal(err)
		}
		f.advance(oauthKeep - time.Minute)
		if _, err := f.s.RegisterOAuthClient(ctx, "Another", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.OAuthClient(ctx, unused.ID); err != nil {
			t.Errorf("a client registered less than a day ago: %v, want it kept", err)
		}
		f.advance(2 * time.Minute)
		if _, err := f.s.RegisterOAuthClient(ctx, "Another", nil); err != nil {
			t.Fatal(err)
		}
		var e *Error
		if _, err := f.s.OAuthClient(ctx, unused.ID); !errors.As(err, &e) || e.Kind != KindNotFound {
			t.Errorf("a client unused a day after it registered: %v, want it gone (unknown client_id)", err)
		}
		if _, err := f.s.OAuthClient(ctx, used.ID); err != nil {
			t.Errorf("a client someone signed in with: %v, want it kept", err)
		}
	})
}
