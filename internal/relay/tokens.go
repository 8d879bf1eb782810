package relay

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
)

// The "Connected clients and tokens" page: a person sees their live login
// tokens, web sessions and OAuth connections, and revokes any of them.
//
// A token is named by a public id: the first 8 bytes of its stored SHA-256
// hash, in hex. The id cannot be used as a token (it is not even the whole
// hash, and the hash is no token either), and it is looked up only among
// the caller's own live tokens, so another person's id, another
// organization's and a missing one all answer the same. An OAuth connection
// is named by its grant id (as list_connected_clients names it).

// Kinds of MyToken.
const (
	TokenKindLogin = "login" // from the login tool or `ctalk login`
	TokenKindWeb   = "web"   // a signed-in browser
	TokenKindOAuth = "oauth" // a client connected through OAuth sign-in
	tokenIDBytes   = 8       // bytes of the hash in a token's public id
	maxListed      = 200     // login tokens and sessions listed at most
	grantIDPrefix  = "conn-" // how grant ids start (see Authorize)
)

// MyToken is one live token or connection of the caller.
type MyToken struct {
	// ID names it for RevokeMyToken; it is no secret and grants nothing.
	ID   string
	Kind string
	// Current marks the token of this very call (the browser's own session).
	Current bool
	// ClientName and ClientID are an OAuth connection's client.
	ClientName string
	ClientID   string
	CreatedAt  time.Time
	// ExpiresAt is when the token stops working unused; for an OAuth
	// connection, when its newest refresh token expires (nil: only its
	// current access tokens remain).
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
}

// MyTokens is what the caller holds.
type MyTokens struct {
	Tokens  []MyToken // login tokens and web sessions, newest first
	Clients []MyToken // OAuth connections, newest first
	// More is set when more than the listed tokens are live.
	More bool
}

// tokenPublicID is a token's public id.
func tokenPublicID(hash []byte) string {
	return hex.EncodeToString(hash[:min(tokenIDBytes, len(hash))])
}

func tokenKind(t db.Token) string {
	if t.Resource != nil && *t.Resource == WebResource {
		return TokenKindWeb
	}
	return TokenKindLogin
}

// ListMyTokens lists the caller's live login tokens, web sessions and OAuth
// connections.
func (s *Service) ListMyTokens(ctx context.Context, cred Credentials) (MyTokens, error) {
	var out MyTokens
	err := s.store.View(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
		now := s.clock()
		toks, err := q.ListUserTokens(ctx, c.user.OrgID, c.user.ID, now, maxListed+1)
		if err != nil {
			return err
		}
		if len(toks) > maxListed {
			toks, out.More = toks[:maxListed], true
		}
		out.Tokens = make([]MyToken, 0, len(toks))
		for _, t := range toks {
			out.Tokens = append(out.Tokens, tokenListed(t, c.token))
		}
		grants, err := q.ListOAuthGrants(ctx, c.user.OrgID, c.user.ID)
		if err != nil {
			return err
		}
		refreshes, err := q.ListUserGrantRefreshes(ctx, c.user.OrgID, c.user.ID, now)
		if err != nil {
			return err
		}
		out.Clients = grantsListed(grants, refreshes, c.token)
		return nil
	}))
	if err != nil {
		return MyTokens{}, err
	}
	return out, nil
}

// tokenListed is a login token or web session as the lists show it;
// current is the token of the call.
func tokenListed(t, current db.Token) MyToken {
	exp := t.ExpiresAt
	return MyToken{ID: tokenPublicID(t.TokenHash), Kind: tokenKind(t), CreatedAt: t.CreatedAt, ExpiresAt: &exp,
		LastUsedAt: t.LastUsedAt, Current: current.TokenHash != nil && string(t.TokenHash) == string(current.TokenHash)}
}

// grantsListed lists grants (newest first, as the queries return them) as
// connected clients, each lasting as long as its newest refresh token;
// current is the token of the call.
func grantsListed(grants []db.OAuthGrant, refreshes []db.GrantRefresh, current db.Token) []MyToken {
	last := map[string]time.Time{}
	for _, r := range refreshes {
		if r.ExpiresAt.After(last[r.GrantID]) {
			last[r.GrantID] = r.ExpiresAt
		}
	}
	out := make([]MyToken, 0, len(grants))
	for _, g := range grants {
		m := MyToken{ID: g.ID, Kind: TokenKindOAuth, ClientName: g.ClientName, ClientID: g.ClientID,
			CreatedAt: g.CreatedAt, LastUsedAt: g.LastUsedAt,
			Current: current.GrantID != nil && *current.GrantID == g.ID}
		if e, ok := last[g.ID]; ok {
			m.ExpiresAt = &e
		}
		out = append(out, m)
	}
	return out
}

// RevokedToken reports what RevokeMyToken ended.
type RevokedToken struct {
	ID   string
	Kind string
	// Current is set when the caller revoked the token of this very call:
	// they are signed out.
	Current bool
}

// errNoSuchToken is the one answer for a token id that is missing, already
// revoked or expired, or not the caller's.
var errNoSuchToken = &Error{Kind: KindNotFound, msg: "you have no live token or connected client with that id: " +
	"it may be revoked or expired already; reload the list to see the ids"}

// RevokeMyToken revokes one of the caller's login tokens or web sessions
// (by its public id) or OAuth connections (by its grant id, which also ends
// its access and refresh tokens, as revoke_connected_client does). The
// caller may revoke the token they call with.
func (s *Service) RevokeMyToken(ctx context.Context, cred Credentials, idArg string) (RevokedToken, error) {
	id := strings.ToLower(strings.TrimSpace(idArg))
	if id == "" || len(id) > MaxIDLen {
		return RevokedToken{}, badInput("id is required: it is shown next to each token on the list")
	}
	var out RevokedToken
	err := s.store.InTx(ctx, s.asCaller(ctx, cred, func(q db.Queries, c caller) error {
		now := s.clock()
		if strings.HasPrefix(id, grantIDPrefix) {
			n, err := q.RevokeOAuthGrant(ctx, c.user.OrgID, c.user.ID, strings.TrimSpace(idArg), now)
			if err != nil {
				return err
			}
			if n == 0 {
				return errNoSuchToken
			}
			out = RevokedToken{ID: strings.TrimSpace(idArg), Kind: TokenKindOAuth,
				Current: c.token.GrantID != nil && *c.token.GrantID == strings.TrimSpace(idArg)}
			return s.auditRevoke(ctx, q, c, TokenKindOAuth, out.ID)
		}
		if len(id) != 2*tokenIDBytes {
			return errNoSuchToken
		}
		// Only the caller's own live tokens are searched: the id of anyone
		// else's never matches.
		toks, err := q.ListUserTokens(ctx, c.user.OrgID, c.user.ID, now, 1<<30)
		if err != nil {
			return err
		}
		for _, t := range toks {
			if tokenPublicID(t.TokenHash) != id {
				continue
			}
			if err := q.RevokeToken(ctx, t.TokenHash, now); errors.Is(err, db.ErrNotFound) {
				return errNoSuchToken // revoked a moment ago
			} else if err != nil {
				return err
			}
			out = RevokedToken{ID: id, Kind: tokenKind(t), Current: string(t.TokenHash) == string(c.token.TokenHash)}
			return s.auditRevoke(ctx, q, c, out.Kind, "")
		}
		return errNoSuchToken
	}))
	if err != nil {
		return RevokedToken{}, err
	}
	return out, nil
}
