package relay

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// TestMyTokens: a person lists their live login tokens, web sessions
// (the current one marked) and OAuth connections, and revokes any of them
// by its public id; the ids of other people's tokens, of another
// organization's and made-up ones get the same answer and revoke nothing.
func TestMyTokens(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "umar", "john")
		f.org("other")
		f.user("other", "umar")
		ctx := t.Context()

		mcpTok := f.login("acme", "umar")
		johnTok := f.login("acme", "john")
		otherTok := f.login("other", "umar")
		sess, err := f.s.SignInWeb(ctx, "acme", "umar", testUserPassword)
		if err != nil {
			t.Fatal(err)
		}
		web := Credentials{Bearer: sess.Token, Resource: WebResource}

		// An OAuth connection with a live access token.
		const resource = "https://ctalk.example/oauth/mcp"
		verifier := strings.Repeat("v", 43)
		sum := sha256.Sum256([]byte(verifier))
		code, err := f.s.Authorize(ctx, AuthorizeRequest{ClientID: "client-1", ClientName: "Claude <b>", RedirectURI: "https://c.example/cb",
			CodeChallenge: base64.RawURLEncoding.EncodeToString(sum[:]), Resource: resource, Scope: ScopeCtalk}, "acme", "umar", testUserPassword)
		if err != nil {
			t.Fatal(err)
		}
		oauth, err := f.s.ExchangeCode(ctx, code, "client-1", "https://c.example/cb", verifier, resource)
		if err != nil {
			t.Fatal(err)
		}

		list, err := f.s.ListMyTokens(ctx, web)
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Tokens) != 2 || len(list.Clients) != 1 {
			t.Fatalf("ListMyTokens = %+v; want a login token, this session and one client", list)
		}
		ids := map[string]MyToken{}
		for _, m := range append(list.Tokens, list.Clients...) {
			ids[m.Kind] = m
			if strings.Contains(mcpTok, m.ID) || strings.Contains(sess.Token, m.ID) || strings.Contains(oauth.AccessToken, m.ID) {
				t.Errorf("token id %q is part of a token", m.ID)
			}
		}
		login, session, client := ids[TokenKindLogin], ids[TokenKindWeb], ids[TokenKindOAuth]
		if login.ID != tokenPublicID(hashToken(mcpTok)) || len(login.ID) != 16 || login.Current || login.ExpiresAt == nil {
			t.Errorf("login token listed as %+v", login)
		}
		if session.ID != tokenPublicID(hashToken(sess.Token)) || !session.Current || !session.ExpiresAt.Equal(sess.ExpiresAt) {
			t.Errorf("web session listed as %+v; want it current, expiring %v", session, sess.ExpiresAt)
		}
		if client.ClientName != "Claude <b>" || client.Current || client.LastUsedAt == nil || client.ExpiresAt == nil ||
			!client.ExpiresAt.Equal(f.s.clock().Add(RefreshTokenTTL)) {
			t.Errorf("OAuth connection listed as %+v", client)
		}

		// Someone else's token ids, made-up and malformed ones: one answer, nothing revoked.
		var want *Error
		for _, id := range []string{tokenPublicID(hashToken(johnTok)), tokenPublicID(hashToken(otherTok)), "0000000000000000",
			"conn-nothere", "zz", hex64(hashToken(mcpTok))} {
			_, err := f.s.RevokeMyToken(ctx, web, id)
			var re *Error
			if !errors.As(err, &re) || re.Kind != KindNotFound {
				t.Fatalf("RevokeMyToken(%q) = %v; want not found", id, err)
			}
			if want == nil {
				want = re
			} else if re.Error() != want.Error() {
				t.Errorf("RevokeMyToken(%q) says %q; want the same as for another's token: %q", id, re, want)
			}
		}
		for _, tok := range []struct{ org, tok string }{{"acme", johnTok}, {"other", otherTok}, {"acme", mcpTok}} {
			if _, err := f.s.Whoami(ctx, Credentials{Token: tok.tok}); err != nil {
				t.Errorf("a token outlived someone's revocation of a foreign id: %v", err)
			}
		}
		// Another person cannot revoke umar's client by its grant id either.
		if _, err := f.s.RevokeMyToken(ctx, Credentials{Token: johnTok}, client.ID); err == nil {
			t.Errorf("john revoked umar's OAuth connection")
		}

		// Revoking the login token ends it; revoking it again is "no such token".
		if r, err := f.s.RevokeMyToken(ctx, web, strings.ToUpper(login.ID)); err != nil || r.Kind != TokenKindLogin || r.Current {
			t.Fatalf("RevokeMyToken(login) = %+v, %v", r, err)
		}
		if _, err := f.s.Whoami(ctx, Credentials{Token: mcpTok}); !errors.Is(err, errBadToken) {
			t.Errorf("a revoked login token still works: %v", err)
		}
		if _, err := f.s.RevokeMyToken(ctx, web, login.ID); err == nil {
			t.Errorf("revoking a revoked token again succeeded")
		}

		// Revoking the OAuth connection ends its access and refresh tokens.
		if r, err := f.s.RevokeMyToken(ctx, web, client.ID); err != nil || r.Kind != TokenKindOAuth {
			t.Fatalf("RevokeMyToken(client) = %+v, %v", r, err)
		}
		if _, err := f.s.CheckAccess(ctx, oauth.AccessToken, resource); !errors.Is(err, ErrNoAccessToken) {
			t.Errorf("the access token of a revoked connection: %v", err)
		}
		if _, err := f.s.RefreshOAuth(ctx, oauth.RefreshToken, "client-1", "", resource); err == nil {
			t.Errorf("the refresh token of a revoked connection still works")
		}
		if list, err := f.s.ListMyTokens(ctx, web); err != nil || len(list.Tokens) != 1 || len(list.Clients) != 0 {
			t.Errorf("after revoking: %+v, %v; want only this session", list, err)
		}

		// Revoking the current session signs it out.
		if r, err := f.s.RevokeMyToken(ctx, web, session.ID); err != nil || !r.Current || r.Kind != TokenKindWeb {
			t.Fatalf("RevokeMyToken(this session) = %+v, %v", r, err)
		}
		if _, err := f.s.WebSessionUser(ctx, web); !errors.Is(err, errBadToken) {
			t.Errorf("a revoked session still works: %v", err)
		}

		// Expired tokens are not listed (and cannot be revoked); the caller's
		// own login token is marked current.
		if _, err := f.s.SignInWeb(ctx, "acme", "umar", testUserPassword); err != nil {
			t.Fatal(err)
		}
		tok2 := f.login("acme", "umar")
		f.advance(WebSessionIdle + time.Minute)
		list, err = f.s.ListMyTokens(ctx, Credentials{Token: tok2})
		if err != nil || len(list.Tokens) != 1 || list.Tokens[0].Kind != TokenKindLogin || !list.Tokens[0].Current {
			t.Errorf("after the session expired: %+v, %v; want only the current login token", list, err)
		}
	})
}

func hex64(b []byte) string {
	return tokenPublicID(b) + tokenPublicID(b[8:]) + tokenPublicID(b[16:]) + tokenPublicID(b[24:])
}
