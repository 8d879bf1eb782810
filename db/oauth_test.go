package db_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// The OAuth storage contract, on both backends: grants (one connected client
// of one person), the codes and refresh tokens issued under them, access
// tokens (auth_tokens rows with a grant), and registered clients.

const testResource = "https://relay.example/oauth/mcp"

func newGrant(orgID, userID, id string, created time.Time) db.OAuthGrant {
	return db.OAuthGrant{
		ID: id, OrgID: orgID, UserID: userID, ClientID: "client-of-" + id, ClientName: "Client " + id,
		Resource: testResource, Scope: "ctalk offline_access", CreatedAt: created,
	}
}

// accessToken is an OAuth access token of a grant, as the token endpoint stores it.
func accessToken(hash string, g db.OAuthGrant) db.Token {
	return db.Token{
		TokenHash: []byte(hash), OrgID: g.OrgID, UserID: g.UserID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour),
		GrantID: ptr(g.ID), Resource: ptr(g.Resource), Scope: ptr(g.Scope),
	}
}

func newRefresh(hash, grantID string) db.OAuthRefresh {
	return db.OAuthRefresh{TokenHash: []byte(hash), GrantID: grantID, CreatedAt: t0, ExpiresAt: t0.Add(30 * 24 * time.Hour)}
}

func newCode(hash, grantID string) db.OAuthCode {
	return db.OAuthCode{
		CodeHash: []byte(hash), GrantID: grantID, RedirectURI: "http://127.0.0.1:33418/callback",
		CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", CreatedAt: t0, ExpiresAt: t0.Add(time.Minute),
	}
}

// create stores fixtures in one transaction: any of db.OAuthGrant,
// db.OAuthCode, db.OAuthRefresh, db.Token, db.OAuthClient.
func create(t *testing.T, s db.Store, rows ...any) {
	t.Helper()
	mustTx(t, s, func(q db.Queries) error {
		ctx := t.Context()
		for _, r := range rows {
			var err error
			switch r := r.(type) {
			case db.OAuthGrant:
				err = q.CreateOAuthGrant(ctx, r)
			case db.OAuthCode:
				err = q.CreateOAuthCode(ctx, r)
			case db.OAuthRefresh:
				err = q.CreateOAuthRefresh(ctx, r)
			case db.Token:
				err = q.CreateToken(ctx, r)
			case db.OAuthClient:
				err = q.CreateOAuthClient(ctx, r)
			default:
				t.Fatalf("create: unknown fixture %T", r)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

func getGrant(t *testing.T, s db.Store, id string) db.OAuthGrant {
	t.Helper()
	var g db.OAuthGrant
	view(t, s, func(q db.Queries) (err error) {
		g, err = q.GetOAuthGrant(t.Context(), id)
		return err
	})
	return g
}

func getRefresh(t *testing.T, s db.Store, hash string) db.OAuthRefresh {
	t.Helper()
	var r db.OAuthRefresh
	view(t, s, func(q db.Queries) (err error) {
		r, err = q.GetOAuthRefresh(t.Context(), []byte(hash))
		return err
	})
	return r
}

// tokenRevoked reports whether GetTokenUser shows the token revoked.
func tokenRevoked(t *testing.T, s db.Store, hash string) bool {
	t.Helper()
	var tok db.Token
	view(t, s, func(q db.Queries) (err error) {
		tok, _, err = q.GetTokenUser(t.Context(), []byte(hash))
		return err
	})
	return tok.RevokedAt != nil
}

func TestOAuthClients(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		c := db.OAuthClient{ID: "dcr-1", Name: "Claude", RedirectURIs: []string{"https://claude.ai/api/mcp/auth_callback", "http://127.0.0.1:6274/cb"}, CreatedAt: t0}
		create(t, s, c)
		err := inTx(t, s, func(q db.Queries) error {
			return q.CreateOAuthClient(ctx, db.OAuthClient{ID: "dcr-1", Name: "other", CreatedAt: t0})
		})
		wantErr(t, "CreateOAuthClient(dcr-1) again", err, db.ErrConflict)
		// A client with no redirect URIs comes back with none, not a broken row.
		create(t, s, db.OAuthClient{ID: "dcr-2", Name: "Bare", CreatedAt: t0})

		view(t, s, func(q db.Queries) error {
			got, err := q.GetOAuthClient(ctx, "dcr-1")
			if err != nil {
				t.Fatalf("GetOAuthClient(dcr-1) = %v", err)
			}
			if diff := cmp.Diff(c, got); diff != "" {
				t.Errorf("GetOAuthClient(dcr-1) mismatch (-want +got):\n%s", diff)
			}
			checkUTC(t, "OAuthClient.CreatedAt", got.CreatedAt, t0)
			got, err = q.GetOAuthClient(ctx, "dcr-2")
			if err != nil || len(got.RedirectURIs) != 0 {
				t.Errorf("GetOAuthClient(dcr-2) = %+v, %v; want no redirect URIs, nil", got, err)
			}
			_, err = q.GetOAuthClient(ctx, "nope")
			wantErr(t, "GetOAuthClient(nope)", err, db.ErrNotFound)
			return nil
		})
	})
}

func TestOAuthGrants(t *testing.T) {
	t.Parallel()
	forEachTwoOrgs(t, []string{"amy", "bob"}, []string{"amy"}, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		older := newGrant("a", "amy", "g-old", t0)
		newer := newGrant("a", "amy", "g-new", t0.Add(time.Minute))
		bobs := newGrant("a", "bob", "g-bob", t0.Add(2*time.Minute))
		otherOrg := newGrant("b", "amy", "g-b-amy", t0.Add(3*time.Minute))
		create(t, s, older, newer, bobs, otherOrg)

		err := inTx(t, s, func(q db.Queries) error { return q.CreateOAuthGrant(ctx, newGrant("a", "bob", "g-old", t0)) })
		wantErr(t, "CreateOAuthGrant(g-old) again", err, db.ErrConflict)
		err = inTx(t, s, func(q db.Queries) error { return q.CreateOAuthGrant(ctx, newGrant("a", "nobody", "g-x", t0)) })
		wantErr(t, "CreateOAuthGrant(user nobody)", err, db.ErrNotFound)

		if diff := cmp.Diff(older, getGrant(t, s, "g-old")); diff != "" {
			t.Errorf("GetOAuthGrant(g-old) mismatch (-want +got):\n%s", diff)
		}
		view(t, s, func(q db.Queries) error {
			_, err := q.GetOAuthGrant(ctx, "nope")
			wantErr(t, "GetOAuthGrant(nope)", err, db.ErrNotFound)
			return nil
		})

		list := func(org, user string) []db.OAuthGrant {
			t.Helper()
			var gs []db.OAuthGrant
			view(t, s, func(q db.Queries) (err error) {
				gs, err = q.ListOAuthGrants(ctx, org, user)
				return err
			})
			return gs
		}
		if diff := cmp.Diff([]db.OAuthGrant{newer, older}, list("a", "amy")); diff != "" {
			t.Errorf("ListOAuthGrants(a, amy) mismatch (-want +got): newest first, only amy's of a\n%s", diff)
		}

		used := t0.Add(time.Hour)
		mustTx(t, s, func(q db.Queries) error { return q.TouchOAuthGrant(ctx, "g-old", used) })
		older.LastUsedAt = &used
		if diff := cmp.Diff(older, getGrant(t, s, "g-old")); diff != "" {
			t.Errorf("GetOAuthGrant(g-old) after TouchOAuthGrant mismatch (-want +got):\n%s", diff)
		}
		err = inTx(t, s, func(q db.Queries) error { return q.TouchOAuthGrant(ctx, "nope", used) })
		wantErr(t, "TouchOAuthGrant(nope)", err, db.ErrNotFound)

		revoke := func(org, user, id string) int64 {
			t.Helper()
			var n int64
			mustTx(t, s, func(q db.Queries) (err error) {
				n, err = q.RevokeOAuthGrant(ctx, org, user, id, used)
				return err
			})
			return n
		}
		// Another person's grant, or one of the same id in another
		// organization: nothing changes.
		if n := revoke("a", "bob", "g-old"); n != 0 {
			t.Errorf("RevokeOAuthGrant(a, bob, amy's g-old) = %d, want 0", n)
		}
		if n := revoke("b", "amy", "g-old"); n != 0 {
			t.Errorf("RevokeOAuthGrant(b, amy, a's g-old) = %d, want 0", n)
		}
		if diff := cmp.Diff(older, getGrant(t, s, "g-old")); diff != "" {
			t.Errorf("GetOAuthGrant(g-old) after other users' RevokeOAuthGrant mismatch (-want +got): must be untouched\n%s", diff)
		}
		if n := revoke("a", "amy", "nope"); n != 0 {
			t.Errorf("RevokeOAuthGrant(a, amy, nope) = %d, want 0", n)
		}

		if n := revoke("a", "amy", "g-old"); n != 1 {
			t.Errorf("RevokeOAuthGrant(a, amy, g-old) = %d, want 1", n)
		}
		older.RevokedAt = &used
		if diff := cmp.Diff(older, getGrant(t, s, "g-old")); diff != "" {
			t.Errorf("GetOAuthGrant(g-old) after RevokeOAuthGrant mismatch (-want +got):\n%s", diff)
		}
		if n := revoke("a", "amy", "g-old"); n != 0 {
			t.Errorf("RevokeOAuthGrant(a, amy, g-old) again = %d, want 0", n)
		}
		if diff := cmp.Diff([]db.OAuthGrant{newer}, list("a", "amy")); diff != "" {
			t.Errorf("ListOAuthGrants(a, amy) after revoking g-old mismatch (-want +got):\n%s", diff)
		}
		err = inTx(t, s, func(q db.Queries) error { return q.TouchOAuthGrant(ctx, "g-old", used.Add(time.Minute)) })
		wantErr(t, "TouchOAuthGrant(revoked g-old)", err, db.ErrNotFound)
		if got := getGrant(t, s, "g-old").LastUsedAt; got == nil || !got.Equal(used) {
			t.Errorf("GetOAuthGrant(g-old).LastUsedAt after touching it revoked = %v, want %v", got, used)
		}
		if gs := list("a", "nobody"); len(gs) != 0 {
			t.Errorf("ListOAuthGrants(a, nobody) = %v, want none", gs)
		}
	})
}

// checkOnce checks a Use* call: the first marks the row used, later calls
// return false, an unknown hash is ErrNotFound.
func checkOnce(t *testing.T, s db.Store, what string, use func(q db.Queries, hash []byte, at time.Time) (bool, error), hash string) {
	t.Helper()
	call := func(h string, at time.Time) (ok bool, err error) {
		t.Helper()
		err = inTx(t, s, func(q db.Queries) error {
			ok, err = use(q, []byte(h), at)
			return err
		})
		return ok, err
	}
	if ok, err := call(hash, t0.Add(time.Second)); !ok || err != nil {
		t.Errorf("%s(%s) = %v, %v; want true, nil", what, hash, ok, err)
	}
	if ok, err := call(hash, t0.Add(2*time.Second)); ok || err != nil {
		t.Errorf("%s(%s) again = %v, %v; want false, nil", what, hash, ok, err)
	}
	ok, err := call("nope", t0)
	if ok {
		t.Errorf("%s(nope) = true, want false", what)
	}
	wantErr(t, what+"(nope)", err, db.ErrNotFound)
}

func TestOAuthCodes(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy")
		g := newGrant("a", "amy", "g1", t0)
		c := newCode("code-1", "g1")
		create(t, s, g, c)
		err := inTx(t, s, func(q db.Queries) error { return q.CreateOAuthCode(ctx, newCode("code-1", "g1")) })
		wantErr(t, "CreateOAuthCode(code-1) again", err, db.ErrConflict)
		err = inTx(t, s, func(q db.Queries) error { return q.CreateOAuthCode(ctx, newCode("code-2", "nope")) })
		wantErr(t, "CreateOAuthCode(grant nope)", err, db.ErrNotFound)

		get := func() db.OAuthCode {
			t.Helper()
			var got db.OAuthCode
			view(t, s, func(q db.Queries) (err error) {
				got, err = q.GetOAuthCode(ctx, []byte("code-1"))
				return err
			})
			return got
		}
		if diff := cmp.Diff(c, get()); diff != "" {
			t.Errorf("GetOAuthCode(code-1) mismatch (-want +got):\n%s", diff)
		}
		view(t, s, func(q db.Queries) error {
			_, err := q.GetOAuthCode(ctx, []byte("nope"))
			wantErr(t, "GetOAuthCode(nope)", err, db.ErrNotFound)
			return nil
		})

		checkOnce(t, s, "UseOAuthCode", func(q db.Queries, h []byte, at time.Time) (bool, error) { return q.UseOAuthCode(ctx, h, at) }, "code-1")
		c.UsedAt = ptr(t0.Add(time.Second)) // the first use's time, kept
		if diff := cmp.Diff(c, get()); diff != "" {
			t.Errorf("GetOAuthCode(code-1) after use mismatch (-want +got):\n%s", diff)
		}
		checkUTC(t, "OAuthCode.UsedAt", *get().UsedAt, *c.UsedAt)
	})
}

func TestOAuthRefreshTokens(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy")
		r := newRefresh("rt-1", "g1")
		create(t, s, newGrant("a", "amy", "g1", t0), r)
		err := inTx(t, s, func(q db.Queries) error { return q.CreateOAuthRefresh(ctx, newRefresh("rt-1", "g1")) })
		wantErr(t, "CreateOAuthRefresh(rt-1) again", err, db.ErrConflict)
		err = inTx(t, s, func(q db.Queries) error { return q.CreateOAuthRefresh(ctx, newRefresh("rt-2", "nope")) })
		wantErr(t, "CreateOAuthRefresh(grant nope)", err, db.ErrNotFound)

		if diff := cmp.Diff(r, getRefresh(t, s, "rt-1")); diff != "" {
			t.Errorf("GetOAuthRefresh(rt-1) mismatch (-want +got):\n%s", diff)
		}
		view(t, s, func(q db.Queries) error {
			_, err := q.GetOAuthRefresh(ctx, []byte("nope"))
			wantErr(t, "GetOAuthRefresh(nope)", err, db.ErrNotFound)
			return nil
		})

		checkOnce(t, s, "UseOAuthRefresh", func(q db.Queries, h []byte, at time.Time) (bool, error) { return q.UseOAuthRefresh(ctx, h, at) }, "rt-1")
		r.UsedAt = ptr(t0.Add(time.Second))
		if diff := cmp.Diff(r, getRefresh(t, s, "rt-1")); diff != "" {
			t.Errorf("GetOAuthRefresh(rt-1) after use mismatch (-want +got):\n%s", diff)
		}
	})
}

// TestUseOAuthOnceUnderConcurrency races redemptions of one code and of one
// refresh token: exactly one of each wins.
func TestUseOAuthOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		seedOrg(t, s, "a", "amy")
		create(t, s, newGrant("a", "amy", "g1", t0), newCode("code", "g1"), newRefresh("rt", "g1"))
		for _, use := range []struct {
			name string
			fn   func(ctx context.Context, q db.Queries) (bool, error)
		}{
			{"UseOAuthCode", func(ctx context.Context, q db.Queries) (bool, error) { return q.UseOAuthCode(ctx, []byte("code"), t0) }},
			{"UseOAuthRefresh", func(ctx context.Context, q db.Queries) (bool, error) { return q.UseOAuthRefresh(ctx, []byte("rt"), t0) }},
		} {
			const callers = 20
			won := make([]bool, callers)
			errs := make([]error, callers)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					<-start
					ctx := context.WithoutCancel(t.Context())
					errs[i] = s.InTx(ctx, func(q db.Queries) (err error) {
						won[i], err = use.fn(ctx, q)
						return err
					})
				})
			}
			close(start)
			wg.Wait()
			winners := 0
			for i := range callers {
				if errs[i] != nil {
					t.Errorf("%s caller %d: %v", use.name, i, errs[i])
				}
				if won[i] {
					winners++
				}
			}
			if winners != 1 {
				t.Errorf("%s raced by %d callers: %d got true, want exactly 1", use.name, callers, winners)
			}
		}
	})
}

// TestOAuthAccessTokens: CreateToken stores an access token's grant,
// resource and scope, and GetToken and GetTokenUser return them; a login
// tool's token has none.
func TestOAuthAccessTokens(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy")
		g := newGrant("a", "amy", "g1", t0)
		oauth := accessToken("at-1", g)
		login := db.Token{TokenHash: []byte("login-1"), OrgID: "a", UserID: "amy", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		create(t, s, g, oauth, login)
		view(t, s, func(q db.Queries) error {
			for _, want := range []db.Token{oauth, login} {
				got, err := q.GetToken(ctx, want.TokenHash)
				if err != nil {
					t.Fatalf("GetToken(%s) = %v", want.TokenHash, err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("GetToken(%s) mismatch (-want +got):\n%s", want.TokenHash, diff)
				}
				got, u, err := q.GetTokenUser(ctx, want.TokenHash)
				if err != nil {
					t.Fatalf("GetTokenUser(%s) = %v", want.TokenHash, err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("GetTokenUser(%s) token mismatch (-want +got):\n%s", want.TokenHash, diff)
				}
				if u.ID != "amy" {
					t.Errorf("GetTokenUser(%s) user = %q, want amy", want.TokenHash, u.ID)
				}
			}
			return nil
		})
	})
}

// TestRevokeOAuthGrantRevokesItsTokens: revoking a grant revokes its access
// tokens and spends its refresh tokens, and nothing of another grant or of
// the login tool.
func TestRevokeOAuthGrantRevokesItsTokens(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy")
		g1, g2 := newGrant("a", "amy", "g1", t0), newGrant("a", "amy", "g2", t0)
		create(t, s, g1, g2,
			accessToken("at-1a", g1), accessToken("at-1b", g1), newRefresh("rt-1a", "g1"), newRefresh("rt-1b", "g1"),
			accessToken("at-2", g2), newRefresh("rt-2", "g2"),
			db.Token{TokenHash: []byte("login"), OrgID: "a", UserID: "amy", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
		// One of g1's refresh tokens was already redeemed: it keeps its time.
		mustTx(t, s, func(q db.Queries) error {
			_, err := q.UseOAuthRefresh(ctx, []byte("rt-1b"), t0.Add(time.Second))
			return err
		})

		at := t0.Add(time.Minute)
		mustTx(t, s, func(q db.Queries) error {
			n, err := q.RevokeOAuthGrant(ctx, "a", "amy", "g1", at)
			if n != 1 {
				t.Errorf("RevokeOAuthGrant(g1) = %d, want 1", n)
			}
			return err
		})
		for hash, want := range map[string]bool{"at-1a": true, "at-1b": true, "at-2": false, "login": false} {
			if got := tokenRevoked(t, s, hash); got != want {
				t.Errorf("GetTokenUser(%s) revoked = %v after RevokeOAuthGrant(g1), want %v", hash, got, want)
			}
		}
		if got := getRefresh(t, s, "rt-1a").UsedAt; got == nil || !got.Equal(at) {
			t.Errorf("GetOAuthRefresh(rt-1a).UsedAt after RevokeOAuthGrant(g1) = %v, want %v", got, at)
		}
		if got := getRefresh(t, s, "rt-1b").UsedAt; got == nil || !got.Equal(t0.Add(time.Second)) {
			t.Errorf("GetOAuthRefresh(rt-1b).UsedAt after RevokeOAuthGrant(g1) = %v, want its redemption's %v", got, t0.Add(time.Second))
		}
		mustTx(t, s, func(q db.Queries) error {
			if ok, err := q.UseOAuthRefresh(ctx, []byte("rt-1a"), at); ok || err != nil {
				t.Errorf("UseOAuthRefresh(rt-1a of revoked g1) = %v, %v; want false, nil", ok, err)
			}
			if ok, err := q.UseOAuthRefresh(ctx, []byte("rt-2"), at); !ok || err != nil {
				t.Errorf("UseOAuthRefresh(rt-2 of live g2) = %v, %v; want true, nil", ok, err)
			}
			return nil
		})
		if got := getGrant(t, s, "g2").RevokedAt; got != nil {
			t.Errorf("GetOAuthGrant(g2).RevokedAt = %v after revoking g1, want nil", got)
		}
	})
}

// TestRevokeOAuthGrantOfAnotherUser: a grant id of another person revokes
// nothing, not even that grant's tokens.
func TestRevokeOAuthGrantOfAnotherUser(t *testing.T) {
	t.Parallel()
	forEachTwoOrgs(t, []string{"amy", "bob"}, []string{"amy"}, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		g := newGrant("a", "amy", "g1", t0)
		create(t, s, g, accessToken("at-1", g), newRefresh("rt-1", "g1"))
		for _, who := range [][2]string{{"a", "bob"}, {"b", "amy"}} {
			mustTx(t, s, func(q db.Queries) error {
				n, err := q.RevokeOAuthGrant(ctx, who[0], who[1], "g1", t0)
				if n != 0 {
					t.Errorf("RevokeOAuthGrant(%s, %s, amy's g1) = %d, want 0", who[0], who[1], n)
				}
				return err
			})
		}
		if diff := cmp.Diff(g, getGrant(t, s, "g1")); diff != "" {
			t.Errorf("GetOAuthGrant(g1) mismatch (-want +got): must be untouched\n%s", diff)
		}
		if tokenRevoked(t, s, "at-1") {
			t.Errorf("amy's access token revoked by another user's RevokeOAuthGrant")
		}
		if got := getRefresh(t, s, "rt-1").UsedAt; got != nil {
			t.Errorf("amy's refresh token used at %v by another user's RevokeOAuthGrant, want unused", got)
		}
	})
}

// TestRevokeUserTokensWithGrants: change_password keeps the caller's token
// and, if it is an OAuth access token, its grant (whose refresh tokens stay
// redeemable); every other grant of the person is revoked with its tokens.
// Reset and deactivation (keep nil) revoke everything. Other people are
// untouched.
func TestRevokeUserTokensWithGrants(t *testing.T) {
	t.Parallel()
	forEachTwoOrgs(t, []string{"amy", "bob"}, []string{"amy"}, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		g1, g2 := newGrant("a", "amy", "g1", t0), newGrant("a", "amy", "g2", t0)
		gBob, gOther := newGrant("a", "bob", "g-bob", t0), newGrant("b", "amy", "g-b-amy", t0)
		login := db.Token{TokenHash: []byte("login"), OrgID: "a", UserID: "amy", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		create(t, s, g1, g2, gBob, gOther, login,
			accessToken("at-1", g1), accessToken("at-1b", g1), newRefresh("rt-1", "g1"),
			accessToken("at-2", g2), newRefresh("rt-2", "g2"),
			accessToken("at-bob", gBob), newRefresh("rt-bob", "g-bob"),
			accessToken("at-b-amy", gOther), newRefresh("rt-b-amy", "g-b-amy"))

		revokeUser := func(keep []byte, at time.Time) int64 {
			t.Helper()
			var n int64
			mustTx(t, s, func(q db.Queries) (err error) {
				n, err = q.RevokeUserTokens(ctx, "a", "amy", keep, at)
				return err
			})
			return n
		}
		check := func(when string, tokens map[string]bool, grants map[string]bool, refresh map[string]bool) {
			t.Helper()
			for hash, want := range tokens {
				if got := tokenRevoked(t, s, hash); got != want {
					t.Errorf("%s: token %s revoked = %v, want %v", when, hash, got, want)
				}
			}
			for id, want := range grants {
				if got := getGrant(t, s, id).RevokedAt != nil; got != want {
					t.Errorf("%s: grant %s revoked = %v, want %v", when, id, got, want)
				}
			}
			for hash, want := range refresh {
				if got := getRefresh(t, s, hash).UsedAt != nil; got != want {
					t.Errorf("%s: refresh token %s used = %v, want %v", when, hash, got, want)
				}
			}
		}
		others := func(m map[string]bool, keys ...string) map[string]bool {
			for _, k := range keys {
				m[k] = false
			}
			return m
		}

		// change_password from an OAuth client: its token and grant stay.
		if n := revokeUser([]byte("at-1"), t0.Add(time.Minute)); n != 3 {
			t.Errorf("RevokeUserTokens(a, amy, keep at-1) = %d, want 3 (login, at-1b, at-2)", n)
		}
		when := "after RevokeUserTokens(keep at-1)"
		check(when,
			others(map[string]bool{"at-1": false, "at-1b": true, "at-2": true, "login": true}, "at-bob", "at-b-amy"),
			others(map[string]bool{"g1": false, "g2": true}, "g-bob", "g-b-amy"),
			others(map[string]bool{"rt-1": false, "rt-2": true}, "rt-bob", "rt-b-amy"))

		// change_password from /mcp: the login token has no grant, so every grant goes.
		create(t, s, db.Token{TokenHash: []byte("login-2"), OrgID: "a", UserID: "amy", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
		if n := revokeUser([]byte("login-2"), t0.Add(2*time.Minute)); n != 1 {
			t.Errorf("RevokeUserTokens(a, amy, keep login-2) = %d, want 1 (at-1)", n)
		}
		when = "after RevokeUserTokens(keep login-2)"
		check(when,
			others(map[string]bool{"at-1": true, "login-2": false}, "at-bob", "at-b-amy"),
			others(map[string]bool{"g1": true}, "g-bob", "g-b-amy"),
			others(map[string]bool{"rt-1": true}, "rt-bob", "rt-b-amy"))

		// A reset: nothing kept.
		g3 := newGrant("a", "amy", "g3", t0)
		create(t, s, g3, accessToken("at-3", g3), newRefresh("rt-3", "g3"))
		if n := revokeUser(nil, t0.Add(3*time.Minute)); n != 2 {
			t.Errorf("RevokeUserTokens(a, amy, keep nil) = %d, want 2 (login-2, at-3)", n)
		}
		when = "after RevokeUserTokens(keep nil)"
		check(when,
			others(map[string]bool{"at-3": true, "login-2": true}, "at-bob", "at-b-amy"),
			others(map[string]bool{"g3": true}, "g-bob", "g-b-amy"),
			others(map[string]bool{"rt-3": true}, "rt-bob", "rt-b-amy"))
		if n := revokeUser(nil, t0.Add(4*time.Minute)); n != 0 {
			t.Errorf("RevokeUserTokens(a, amy, keep nil) again = %d, want 0", n)
		}
		// A grant revoked earlier keeps its revocation time.
		if got := getGrant(t, s, "g2").RevokedAt; got == nil || !got.Equal(t0.Add(time.Minute)) {
			t.Errorf("GetOAuthGrant(g2).RevokedAt = %v, want the first revocation's %v", got, t0.Add(time.Minute))
		}
	})
}

// TestAskPersonChecksResource: a token asks only through the resource it was
// issued for (nil: the login tool's /mcp); any other is AskBadToken and
// stores nothing.
func TestAskPersonChecksResource(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy", "bob")
		g := newGrant("a", "amy", "g1", t0)
		create(t, s, g, accessToken("oauth", g),
			db.Token{TokenHash: []byte("login"), OrgID: "a", UserID: "amy", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})

		askVia := func(hash string, resource *string) db.AskStatus {
			t.Helper()
			var out db.AskOutcome
			mustTx(t, s, func(q db.Queries) (err error) {
				out, err = q.AskPerson(ctx, db.AskParams{TokenHash: []byte(hash), ToUserID: "bob", Question: "Why?", At: t0.Add(time.Minute), Resource: resource})
				return err
			})
			return out.Status
		}
		for _, tt := range []struct {
			hash     string
			resource *string
		}{
			{"oauth", nil},
			{"oauth", ptr(testResource + "/")},
			{"oauth", ptr("https://other.example/oauth/mcp")},
			{"login", ptr(testResource)},
			{"login", ptr("")},
		} {
			res := "nil"
			if tt.resource != nil {
				res = "\"" + *tt.resource + "\""
			}
			if got := askVia(tt.hash, tt.resource); got != db.AskBadToken {
				t.Errorf("AskPerson(%s token, Resource %s) = status %d, want AskBadToken (%d)", tt.hash, res, got, db.AskBadToken)
			}
		}
		var org db.Organization
		view(t, s, func(q db.Queries) (err error) {
			org, err = q.GetOrganization(ctx, "a")
			return err
		})
		if org.LastMessageID != 0 || org.LastEventSeq != 0 {
			t.Errorf("after refused questions: last message %d, last event %d; want 0, 0 (nothing stored)", org.LastMessageID, org.LastEventSeq)
		}
		if _, err := getMessage(t, s, "a", 1); err == nil {
			t.Errorf("GetMessage(a, 1) after refused questions = found, want %v", db.ErrNotFound)
		}

		if got := askVia("oauth", ptr(testResource)); got != db.Asked {
			t.Errorf("AskPerson(oauth token, its resource) = status %d, want Asked", got)
		}
		if got := askVia("login", nil); got != db.Asked {
			t.Errorf("AskPerson(login token, Resource nil) = status %d, want Asked", got)
		}
		for id := int64(1); id <= 2; id++ {
			if m, err := getMessage(t, s, "a", id); err != nil || m.FromUserID != "amy" {
				t.Errorf("GetMessage(a, %d) = %+v, %v; want amy's question", id, m, err)
			}
		}
	})
}

// TestPruneOAuth deletes expired codes and refresh tokens, and grants
// revoked before the cutoff with everything issued under them.
func TestPruneOAuth(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy")
		cutoff := t0.Add(24 * time.Hour)
		expiring := func(r db.OAuthRefresh, exp time.Time) db.OAuthRefresh { r.ExpiresAt = exp; return r }
		expiringCode := func(c db.OAuthCode, exp time.Time) db.OAuthCode { c.ExpiresAt = exp; return c }
		live, oldRevoked, newRevoked := newGrant("a", "amy", "live", t0), newGrant("a", "amy", "old", t0), newGrant("a", "amy", "new", t0)
		create(t, s, live, oldRevoked, newRevoked,
			// live grant: one expired and one valid of each.
			expiringCode(newCode("c-live-expired", "live"), cutoff.Add(-time.Second)),
			expiringCode(newCode("c-live-valid", "live"), cutoff.Add(time.Second)),
			expiring(newRefresh("r-live-expired", "live"), cutoff.Add(-time.Second)),
			expiring(newRefresh("r-live-valid", "live"), cutoff.Add(time.Hour)),
			// revoked before the cutoff: everything goes, expired or not.
			expiringCode(newCode("c-old", "old"), cutoff.Add(time.Second)),
			expiring(newRefresh("r-old", "old"), cutoff.Add(time.Hour)),
			accessToken("at-old", oldRevoked),
			// revoked at the cutoff: stays until the next prune.
			expiring(newRefresh("r-new", "new"), cutoff.Add(time.Hour)))
		mustTx(t, s, func(q db.Queries) error {
			if _, err := q.RevokeOAuthGrant(ctx, "a", "amy", "old", cutoff.Add(-time.Second)); err != nil {
				return err
			}
			_, err := q.RevokeOAuthGrant(ctx, "a", "amy", "new", cutoff)
			return err
		})

		var n int64
		mustTx(t, s, func(q db.Queries) (err error) {
			n, err = q.PruneOAuth(ctx, cutoff)
			return err
		})
		// c-live-expired, r-live-expired, c-old, r-old, grant old.
		if n != 5 {
			t.Errorf("PruneOAuth(cutoff) = %d, want 5", n)
		}
		view(t, s, func(q db.Queries) error {
			for hash, want := range map[string]bool{"c-live-expired": false, "c-live-valid": true, "c-old": false} {
				_, err := q.GetOAuthCode(ctx, []byte(hash))
				if got := err == nil; got != want {
					t.Errorf("after PruneOAuth: code %s kept = %v (%v), want %v", hash, got, err, want)
				}
			}
			for hash, want := range map[string]bool{"r-live-expired": false, "r-live-valid": true, "r-old": false, "r-new": true} {
				_, err := q.GetOAuthRefresh(ctx, []byte(hash))
				if got := err == nil; got != want {
					t.Errorf("after PruneOAuth: refresh token %s kept = %v (%v), want %v", hash, got, err, want)
				}
			}
			for id, want := range map[string]bool{"live": true, "old": false, "new": true} {
				_, err := q.GetOAuthGrant(ctx, id)
				if got := err == nil; got != want {
					t.Errorf("after PruneOAuth: grant %s kept = %v (%v), want %v", id, got, err, want)
				}
			}
			// The pruned grant's access token stays, revoked, until tokens are pruned.
			tok, err := q.GetToken(ctx, []byte("at-old"))
			if err != nil || tok.RevokedAt == nil {
				t.Errorf("GetToken(at-old) after PruneOAuth = %+v, %v; want it revoked", tok, err)
			}
			return nil
		})
		mustTx(t, s, func(q db.Queries) (err error) {
			n, err = q.PruneOAuth(ctx, cutoff)
			return err
		})
		if n != 0 {
			t.Errorf("PruneOAuth(cutoff) again = %d, want 0", n)
		}
	})
}

// TestPruneUnusedOAuthClients: a registered client that no grant names is
// deleted once it registered before the cutoff; one a grant names stays,
// until that grant is pruned; a sweep deletes a bounded batch.
func TestPruneUnusedOAuthClients(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, s db.Store) {
		ctx := t.Context()
		seedOrg(t, s, "a", "amy")
		cutoff := t0.Add(24 * time.Hour)
		client := func(id string, at time.Time) db.OAuthClient {
			return db.OAuthClient{ID: id, Name: "Client " + id, CreatedAt: at}
		}
		used, revoked := newGrant("a", "amy", "used", t0), newGrant("a", "amy", "revoked", t0)
		create(t, s, client("client-of-used", t0), client("client-of-revoked", t0), used, revoked,
			client("old-unused", t0), client("new-unused", cutoff))
		// Clients a flood left: more than one sweep deletes.
		const flood = 130
		for i := range flood {
			create(t, s, client(fmt.Sprintf("flood-%03d", i), t0.Add(time.Duration(i)*time.Second)))
		}
		mustTx(t, s, func(q db.Queries) error {
			_, err := q.RevokeOAuthGrant(ctx, "a", "amy", "revoked", cutoff.Add(-time.Second))
			return err
		})
		kept := func(id string) bool {
			var err error
			view(t, s, func(q db.Queries) error { _, err = q.GetOAuthClient(ctx, id); return nil })
			if err != nil && err != db.ErrNotFound {
				t.Fatalf("GetOAuthClient(%s) = %v", id, err)
			}
			return err == nil
		}
		prune := func() {
			mustTx(t, s, func(q db.Queries) error { _, err := q.PruneOAuth(ctx, cutoff); return err })
		}
		prune()
		// The first sweep takes the oldest hundred: the used and revoked
		// clients' neighbours and most of the flood; the rest wait.
		left := 0
		for i := range flood {
			if kept(fmt.Sprintf("flood-%03d", i)) {
				left++
			}
		}
		if left == 0 || left == flood {
			t.Errorf("after one sweep %d of %d flood clients are left, want a bounded batch deleted", left, flood)
		}
		for range 3 {
			prune()
		}
		for id, want := range map[string]bool{
			"client-of-used": true, "new-unused": true, "old-unused": false, "client-of-revoked": false,
			"flood-000": false, fmt.Sprintf("flood-%03d", flood-1): false,
		} {
			if got := kept(id); got != want {
				t.Errorf("after the sweeps: client %s kept = %v, want %v", id, got, want)
			}
		}
	})
}

// TestOAuthMigrationDown: rolling 00005 back keeps the login tool's tokens
// and deletes OAuth's (and drops the OAuth tables); migrating up again
// serves OAuth.
func TestOAuthMigrationDown(t *testing.T) {
	t.Parallel()
	forEachConfig(t, func(t *testing.T, cfg db.Config) {
		ctx := t.Context()
		s := openStore(t, cfg)
		seedOrg(t, s, "a", "amy")
		g := newGrant("a", "amy", "g1", t0)
		login := db.Token{TokenHash: []byte("login"), OrgID: "a", UserID: "amy", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		create(t, s, g, login, accessToken("at-1", g), newRefresh("rt-1", "g1"), newCode("c-1", "g1"))

		m, err := db.OpenMigrator(ctx, cfg)
		if err != nil {
			t.Fatalf("OpenMigrator() = %v", err)
		}
		t.Cleanup(func() { m.Close() })
		done, err := m.DownTo(ctx, 4) // the newer migrations first, then 5
		if err != nil || len(done) == 0 || done[len(done)-1] != 5 {
			t.Fatalf("DownTo(4) = %v, %v; want version 5 rolled back last", done, err)
		}
		if n, err := m.Up(ctx); err != nil || n != len(done) {
			t.Fatalf("Up() = %d, %v; want %d, nil", n, err, len(done))
		}
		view(t, s, func(q db.Queries) error {
			got, err := q.GetToken(ctx, []byte("login"))
			if err != nil {
				t.Fatalf("GetToken(login) after down and up = %v", err)
			}
			if diff := cmp.Diff(login, got); diff != "" {
				t.Errorf("GetToken(login) after down and up mismatch (-want +got):\n%s", diff)
			}
			// Down deletes access tokens: without their grant and resource
			// they would pass for login tokens.
			_, err = q.GetToken(ctx, []byte("at-1"))
			wantErr(t, "GetToken(at-1) after down and up", err, db.ErrNotFound)
			_, err = q.GetOAuthGrant(ctx, "g1")
			wantErr(t, "GetOAuthGrant(g1) after down and up", err, db.ErrNotFound)
			return nil
		})
		create(t, s, g, accessToken("at-2", g), newRefresh("rt-2", "g1"), newCode("c-2", "g1"))
	})
}

// TestRevocationWaitsForRefreshPostgres: a refresh transaction that touches
// its grant first (TouchOAuthGrant) and then issues tokens holds the grant's
// row lock until it commits; a revocation running meanwhile waits for it and
// then revokes the tokens it issued. (SQLite runs one writer at a time.) The
// test commits the refresh only once the revocation is seen waiting for a
// lock, so a revocation that revoked tokens before locking the grant would
// miss them and fail it.
func TestRevocationWaitsForRefreshPostgres(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		revoke func(ctx context.Context, q db.Queries) error
	}{
		{"RevokeOAuthGrant", func(ctx context.Context, q db.Queries) error {
			_, err := q.RevokeOAuthGrant(ctx, "a", "amy", "g1", t0.Add(time.Hour))
			return err
		}},
		{"RevokeUserTokens", func(ctx context.Context, q db.Queries) error {
			_, err := q.RevokeUserTokens(ctx, "a", "amy", nil, t0.Add(time.Hour))
			return err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dbURL, _ := newPostgresSchema(t)
			dbURL, app := dbtest.WithAppName(t, dbURL)
			s := openStore(t, db.Config{DatabaseURL: dbURL})
			ctx := context.WithoutCancel(t.Context())
			seedOrg(t, s, "a", "amy")
			g := newGrant("a", "amy", "g1", t0)
			create(t, s, g, accessToken("at-1", g), newRefresh("rt-1", "g1"))

			touched, commit := make(chan struct{}), make(chan struct{})
			refreshed := make(chan error, 1)
			go func() {
				refreshed <- s.InTx(ctx, func(q db.Queries) error {
					if err := q.TouchOAuthGrant(ctx, "g1", t0.Add(time.Minute)); err != nil {
						return err
					}
					if ok, err := q.UseOAuthRefresh(ctx, []byte("rt-1"), t0.Add(time.Minute)); err != nil || !ok {
						return fmt.Errorf("UseOAuthRefresh(rt-1) = %v, %v; want true, nil", ok, err)
					}
					if err := q.CreateToken(ctx, accessToken("at-2", g)); err != nil {
						return err
					}
					if err := q.CreateOAuthRefresh(ctx, newRefresh("rt-2", "g1")); err != nil {
						return err
					}
					close(touched)
					<-commit
					return nil
				})
			}()
			select {
			case <-touched:
			case err := <-refreshed:
				t.Fatalf("refresh transaction: %v", err)
			}
			revoked := make(chan error, 1)
			go func() { revoked <- s.InTx(ctx, func(q db.Queries) error { return tt.revoke(ctx, q) }) }()

			// Wait until the revocation waits for the refresh's lock.
			conn := pgConn(t, dbURL)
			for {
				var waiting int
				err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
					WHERE application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&waiting)
				if err != nil {
					t.Fatalf("pg_stat_activity: %v", err)
				}
				if waiting > 0 {
					break
				}
				select {
				case err := <-revoked:
					t.Fatalf("%s committed (%v) without waiting for the refresh that touched the grant", tt.name, err)
				case <-time.After(10 * time.Millisecond):
				}
			}
			close(commit)
			if err := <-refreshed; err != nil {
				t.Fatalf("refresh transaction: %v", err)
			}
			if err := <-revoked; err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}

			if !tokenRevoked(t, s, "at-2") {
				t.Errorf("access token issued by the refresh %s waited for is not revoked", tt.name)
			}
			if getRefresh(t, s, "rt-2").UsedAt == nil {
				t.Errorf("refresh token issued by the refresh %s waited for is still redeemable", tt.name)
			}
			err := inTx(t, s, func(q db.Queries) error { return q.TouchOAuthGrant(ctx, "g1", t0.Add(2*time.Hour)) })
			wantErr(t, "TouchOAuthGrant(g1) after "+tt.name, err, db.ErrNotFound)
		})
	}
}
