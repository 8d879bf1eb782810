package relay

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
)

// OAuth 2.1 sign-in: the rules behind ctalk's authorization server. A
// person signs in on ctalk's own page (the same password check and throttle
// as login) and allows a client; that creates a grant — one connected
// client of one person — and a one-time authorization code. The code, with
// its PKCE verifier, buys an access token (an ordinary ctalk token bound to
// the grant, the resource and the scope) and a rotating refresh token.
// Spending a code or a refresh token twice revokes the whole grant, as
// OAuth 2.1 §4.3.1 and §6.1 ask.

// OAuth lifetimes and names.
const (
	AccessTokenTTL  = time.Hour
	RefreshTokenTTL = 30 * 24 * time.Hour
	CodeTTL         = time.Minute

	// ScopeCtalk lets a client do everything its person can do in ctalk.
	ScopeCtalk = "ctalk"
	// ScopeOfflineAccess is tolerated (claude.ai asks for it); a refresh
	// token is issued either way.
	ScopeOfflineAccess = "offline_access"

	// oauthKeep is how long expired codes, refresh and access tokens, and revoked
	// grants, are kept before a sign-in prunes them.
	oauthKeep = 24 * time.Hour

	refreshPrefix = "ctalk_rt_"
	codePrefix    = "ctalk_code_"

	// dcrFree is how many clients one address may register in a row before
	// each further registration waits for a doubling backoff.
	dcrFree = 50
)

// ScopesSupported lists the scopes the authorization server knows.
var ScopesSupported = []string{ScopeCtalk, ScopeOfflineAccess}

// OAuthError is a refusal with the error code an OAuth RFC names
// (invalid_grant, invalid_request, invalid_target, invalid_scope,
// invalid_client, access_denied…). Description is safe to show.
type OAuthError struct {
	Code        string
	Description string
}

func (e *OAuthError) Error() string { return e.Code + ": " + e.Description }

func oauthErr(code, description string) error {
	return &OAuthError{Code: code, Description: description}
}

// errInvalidGrant is the one answer for every code or refresh token that
// does not work, whatever the reason: which check failed is nobody's business.
var errInvalidGrant = oauthErr("invalid_grant", "the authorization code or refresh token is invalid, expired, spent or revoked: sign in again")

// NormalizeScope returns the granted scope for a requested one: the known
// scopes asked for, in a fixed order, or ScopeCtalk when none was asked for.
// An unknown scope is an invalid_scope error.
func NormalizeScope(requested string) (string, error) {
	fields := strings.Fields(requested)
	if len(fields) == 0 {
		return ScopeCtalk, nil
	}
	var out []string
	for _, s := range ScopesSupported {
		if slices.Contains(fields, s) {
			out = append(out, s)
		}
	}
	for _, f := range fields {
		if !slices.Contains(ScopesSupported, f) {
			return "", oauthErr("invalid_scope", "unknown scope "+quoteShort(f)+": ctalk knows "+strings.Join(ScopesSupported, " and "))
		}
	}
	return strings.Join(out, " "), nil
}

// HasScope reports whether a space-separated scope list holds want.
func HasScope(scope, want string) bool { return slices.Contains(strings.Fields(scope), want) }

// quoteShort quotes at most 40 bytes of a caller's string for an error message.
func quoteShort(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return `"` + strings.ToValidUTF8(s, "?") + `"`
}

// RegisterOAuthClient stores a client that registered itself (RFC 7591);
// the face has validated its metadata. Registrations are counted per client
// address, so a flood of them backs off, and a client that has not signed
// anyone in within a day of registering is deleted.
func (s *Service) RegisterOAuthClient(ctx context.Context, name string, redirectURIs []string) (db.OAuthClient, error) {
	if addr := addrKey(ctx); addr != "" {
		err := s.count(ctx, func(wait time.Duration) error {
			return errorf(KindThrottled, "too many clients registered from your address: retry in %d s", int64(math.Ceil(wait.Seconds())))
		}, limit{"dcr:" + addr, dcrFree, true})
		if err != nil {
			return db.OAuthClient{}, err
		}
	}
	c := db.OAuthClient{ID: "ctalk-client-" + randomID(16), Name: name, RedirectURIs: redirectURIs, CreatedAt: s.clock()}
	err := s.store.InTx(ctx, func(q db.Queries) error {
		if err := q.CreateOAuthClient(ctx, c); err != nil {
			return err
		}
		// Registration needs no account: each one sweeps clients that
		// registered a day ago and never signed anyone in, so the table
		// holds about a day's registrations however long a flood goes on.
		_, err := q.PruneOAuth(ctx, c.CreatedAt.Add(-oauthKeep))
		return err
	})
	if err != nil {
		return db.OAuthClient{}, err
	}
	return c, nil
}

// OAuthClient returns a registered client, or a KindNotFound error.
func (s *Service) OAuthClient(ctx context.Context, id string) (db.OAuthClient, error) {
	var c db.OAuthClient
	err := s.store.View(ctx, func(q db.Queries) (err error) {
		c, err = q.GetOAuthClient(ctx, id)
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		return c, errorf(KindNotFound, "unknown client_id: the client must register again")
	}
	return c, err
}

// AuthorizeRequest is an authorization request the face has validated:
// the client is known, the redirect URI is one of its own, PKCE is S256,
// the resource is ctalk's and the scope normalized.
type AuthorizeRequest struct {
	ClientID      string
	ClientName    string
	RedirectURI   string
	CodeChallenge string
	Resource      string
	Scope         string
}

// Authorize checks a person's password exactly as login does (same
// throttle, same answer for every failure) and, when it is right, records
// that they allowed the client and returns a one-time authorization code.
func (s *Service) Authorize(ctx context.Context, req AuthorizeRequest, orgIDArg, userIDArg, pass string) (string, error) {
	u, err := s.verifyLogin(ctx, orgIDArg, userIDArg, pass)
	if err != nil {
		return "", err
	}
	now := s.clock()
	g := db.OAuthGrant{
		ID: "conn-" + randomID(10), OrgID: u.OrgID, UserID: u.ID, ClientID: req.ClientID, ClientName: req.ClientName,
		Resource: req.Resource, Scope: req.Scope, CreatedAt: now,
	}
	code, hash := newSecret(codePrefix)
	c := db.OAuthCode{
		CodeHash: hash, GrantID: g.ID, RedirectURI: req.RedirectURI, CodeChallenge: req.CodeChallenge,
		CreatedAt: now, ExpiresAt: now.Add(CodeTTL),
	}
	err = s.store.InTx(ctx, func(q db.Queries) error {
		if err := stillVerified(ctx, q, u, errBadLogin); err != nil {
			return err
		}
		if err := q.CreateOAuthGrant(ctx, g); err != nil {
			return err
		}
		if err := q.CreateOAuthCode(ctx, c); err != nil {
			return err
		}
		if err := s.audit(ctx, q, u.OrgID, u.ID, AuditSignIn, u.ID, "connected client "+quoteShort(g.ClientName)); err != nil {
			return err
		}
		// Spent and expired codes and refresh tokens, and grants revoked a
		// day ago, are of no use: each sign-in sweeps them.
		_, err := q.PruneOAuth(ctx, now.Add(-oauthKeep))
		return err
	})
	if err != nil {
		return "", err
	}
	return code, nil
}

// OAuthTokens is a token response (RFC 6749 §5.1).
type OAuthTokens struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// ExchangeCode redeems an authorization code (RFC 6749 §4.1.3 with PKCE,
// RFC 7636, and the resource indicator of RFC 8707: resource may be empty
// to mean the one the code was issued for).
func (s *Service) ExchangeCode(ctx context.Context, code, clientID, redirectURI, verifier, resource string) (OAuthTokens, error) {
	if !strings.HasPrefix(code, codePrefix) || len(code) > MaxTokenLen {
		return OAuthTokens{}, errInvalidGrant
	}
	if !validVerifier(verifier) {
		return OAuthTokens{}, oauthErr("invalid_request", "code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636)")
	}
	hash := hashToken(code)
	var out OAuthTokens
	replay := false
	err := s.store.InTx(ctx, func(q db.Queries) error {
		c, err := q.GetOAuthCode(ctx, hash)
		if errors.Is(err, db.ErrNotFound) {
			return errInvalidGrant
		} else if err != nil {
			return err
		}
		g, err := q.GetOAuthGrant(ctx, c.GrantID)
		if err != nil {
			return err
		}
		now := s.clock()
		if c.UsedAt != nil {
			replay = true
			return errInvalidGrant
		}
		if g.RevokedAt != nil || !now.Before(c.ExpiresAt) || g.ClientID != clientID || c.RedirectURI != redirectURI ||
			!pkceMatches(c.CodeChallenge, verifier) {
			return errInvalidGrant
		}
		if resource != "" && !SameResource(resource, g.Resource) {
			return oauthErr("invalid_target", "this code was issued for "+g.Resource+", not "+quoteShort(resource))
		}
		if err := q.TouchOAuthGrant(ctx, g.ID, now); errors.Is(err, db.ErrNotFound) {
			return errInvalidGrant // revoked meanwhile
		} else if err != nil {
			return err
		}
		used, err := q.UseOAuthCode(ctx, hash, now)
		if err != nil {
			return err
		}
		if !used { // a concurrent exchange won
			replay = true
			return errInvalidGrant
		}
		out, err = s.issue(ctx, q, g, g.Scope, now)
		return err
	})
	if replay {
		// A code spent twice may have been stolen: the grant and every token
		// issued from it go (RFC 6749 §4.1.2, OAuth 2.1 §4.1.3).
		s.revokeGrantOf(ctx, func(q db.Queries) (string, error) {
			c, err := q.GetOAuthCode(ctx, hash)
			return c.GrantID, err
		})
	}
	return out, err
}

// RefreshOAuth rotates a refresh token: the old one is spent and a new
// access and refresh token are issued. A spent one presented again revokes
// the grant. scope may narrow the grant's scope; resource must be the grant's.
func (s *Service) RefreshOAuth(ctx context.Context, refresh, clientID, scope, resource string) (OAuthTokens, error) {
	if !strings.HasPrefix(refresh, refreshPrefix) || len(refresh) > MaxTokenLen {
		return OAuthTokens{}, errInvalidGrant
	}
	hash := hashToken(refresh)
	var out OAuthTokens
	replay := false
	err := s.store.InTx(ctx, func(q db.Queries) error {
		r, err := q.GetOAuthRefresh(ctx, hash)
		if errors.Is(err, db.ErrNotFound) {
			return errInvalidGrant
		} else if err != nil {
			return err
		}
		g, err := q.GetOAuthGrant(ctx, r.GrantID)
		if err != nil {
			return err
		}
		now := s.clock()
		if g.RevokedAt != nil || g.ClientID != clientID {
			return errInvalidGrant
		}
		if r.UsedAt != nil {
			replay = true
			return errInvalidGrant
		}
		if !now.Before(r.ExpiresAt) {
			return errInvalidGrant
		}
		u, err := q.GetUser(ctx, g.OrgID, g.UserID)
		if err != nil || u.DeactivatedAt != nil {
			return errInvalidGrant
		}
		if resource != "" && !SameResource(resource, g.Resource) {
			return oauthErr("invalid_target", "this refresh token was issued for "+g.Resource+", not "+quoteShort(resource))
		}
		granted := g.Scope
		if scope != "" {
			for _, f := range strings.Fields(scope) {
				if !HasScope(g.Scope, f) {
					return oauthErr("invalid_scope", "scope "+quoteShort(f)+" was not granted: sign in again to grant it")
				}
			}
			granted = scope
		}
		// The grant's row first: a revocation running meanwhile either
		// commits before (and this refresh finds the grant gone) or waits
		// and revokes what this one issues.
		if err := q.TouchOAuthGrant(ctx, g.ID, now); errors.Is(err, db.ErrNotFound) {
			return errInvalidGrant
		} else if err != nil {
			return err
		}
		used, err := q.UseOAuthRefresh(ctx, hash, now)
		if err != nil {
			return err
		}
		if !used {
			replay = true
			return errInvalidGrant
		}
		out, err = s.issue(ctx, q, g, granted, now)
		return err
	})
	if replay {
		s.revokeGrantOf(ctx, func(q db.Queries) (string, error) {
			r, err := q.GetOAuthRefresh(ctx, hash)
			return r.GrantID, err
		})
	}
	return out, err
}

// issue stores a new access token and refresh token for a grant.
func (s *Service) issue(ctx context.Context, q db.Queries, g db.OAuthGrant, scope string, now time.Time) (OAuthTokens, error) {
	access, ahash := newToken()
	grantID, resource := g.ID, g.Resource
	tok := db.Token{
		TokenHash: ahash, OrgID: g.OrgID, UserID: g.UserID, CreatedAt: now, ExpiresAt: now.Add(AccessTokenTTL),
		GrantID: &grantID, Resource: &resource, Scope: &scope,
	}
	if err := q.CreateToken(ctx, tok); err != nil {
		return OAuthTokens{}, err
	}
	refresh, rhash := newSecret(refreshPrefix)
	if err := q.CreateOAuthRefresh(ctx, db.OAuthRefresh{
		TokenHash: rhash, GrantID: g.ID, CreatedAt: now, ExpiresAt: now.Add(RefreshTokenTTL),
	}); err != nil {
		return OAuthTokens{}, err
	}
	// Each refresh leaves an expired access token behind an hour later.
	if _, err := q.PruneTokens(ctx, now.Add(-oauthKeep)); err != nil {
		return OAuthTokens{}, err
	}
	return OAuthTokens{
		AccessToken: access, TokenType: "Bearer", ExpiresIn: int64(AccessTokenTTL / time.Second),
		RefreshToken: refresh, Scope: scope,
	}, nil
}

// revokeGrantOf revokes the grant a spent code or refresh token belongs to,
// in a transaction of its own (the refusing one rolled back).
func (s *Service) revokeGrantOf(ctx context.Context, grantID func(db.Queries) (string, error)) {
	s.store.InTx(context.WithoutCancel(ctx), func(q db.Queries) error { //nolint:errcheck // the caller is refused either way
		id, err := grantID(q)
		if err != nil {
			return err
		}
		g, err := q.GetOAuthGrant(ctx, id)
		if err != nil {
			return err
		}
		_, err = q.RevokeOAuthGrant(ctx, g.OrgID, g.UserID, g.ID, s.clock())
		return err
	})
}

// RevokeOAuthToken revokes a token a client hands back (RFC 7009): an
// access token revokes itself, a refresh token its whole grant. Unknown
// tokens, and tokens of another client, are ignored, as the RFC asks.
func (s *Service) RevokeOAuthToken(ctx context.Context, token, clientID string) error {
	if len(token) > MaxTokenLen {
		return nil
	}
	hash := hashToken(token)
	return s.store.InTx(ctx, func(q db.Queries) error {
		now := s.clock()
		if strings.HasPrefix(token, refreshPrefix) {
			r, err := q.GetOAuthRefresh(ctx, hash)
			if errors.Is(err, db.ErrNotFound) {
				return nil
			} else if err != nil {
				return err
			}
			g, err := q.GetOAuthGrant(ctx, r.GrantID)
			if err != nil || g.ClientID != clientID {
				return ignoreNotFound(err)
			}
			if n, err := q.RevokeOAuthGrant(ctx, g.OrgID, g.UserID, g.ID, now); err != nil || n == 0 {
				return err
			}
			return s.audit(ctx, q, g.OrgID, g.UserID, AuditTokenRevoke, g.UserID, revokedDetail(TokenKindOAuth, g.ClientName))
		}
		t, err := q.GetToken(ctx, hash)
		if errors.Is(err, db.ErrNotFound) || t.GrantID == nil {
			return nil // login tokens are revoked by the logout tool
		} else if err != nil {
			return err
		}
		g, err := q.GetOAuthGrant(ctx, *t.GrantID)
		if err != nil || g.ClientID != clientID {
			return ignoreNotFound(err)
		}
		if err := q.RevokeToken(ctx, hash, now); err != nil {
			return ignoreNotFound(err)
		}
		return s.audit(ctx, q, g.OrgID, g.UserID, AuditTokenRevoke, g.UserID, revokedDetail(TokenKindOAuth, g.ClientName))
	})
}

func ignoreNotFound(err error) error {
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	return err
}

// Access is what a valid access token allows.
type Access struct {
	OrgID, UserID, Scope string
}

// The refusals of CheckAccess, for the face to turn into a 401 or 403 challenge.
var (
	// ErrNoAccessToken: the request carries a token that is not a live
	// access token for this resource.
	ErrNoAccessToken = errors.New("the access token is invalid, expired, revoked or for another resource")
	// ErrInsufficientScope: the token lacks the scope the resource needs.
	ErrInsufficientScope = errors.New("the access token lacks the ctalk scope")
)

// CheckAccess checks a bearer token at a protected resource: it must be a
// live OAuth access token of an active user, issued for that resource
// (RFC 8707), with the ctalk scope.
func (s *Service) CheckAccess(ctx context.Context, token, resource string) (Access, error) {
	if len(token) > MaxTokenLen || !strings.HasPrefix(token, tokenPrefix) {
		return Access{}, ErrNoAccessToken
	}
	var tok db.Token
	var u db.User
	err := s.store.View(ctx, func(q db.Queries) (err error) {
		tok, u, err = q.GetTokenUser(ctx, hashToken(token))
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		return Access{}, ErrNoAccessToken
	} else if err != nil {
		return Access{}, err
	}
	if tok.RevokedAt != nil || !s.clock().Before(tok.ExpiresAt) || u.DeactivatedAt != nil ||
		tok.Resource == nil || !SameResource(*tok.Resource, resource) {
		return Access{}, ErrNoAccessToken
	}
	scope := ""
	if tok.Scope != nil {
		scope = *tok.Scope
	}
	if !HasScope(scope, ScopeCtalk) {
		return Access{}, ErrInsufficientScope
	}
	return Access{OrgID: tok.OrgID, UserID: tok.UserID, Scope: scope}, nil
}

// SameResource compares two resource indicators, tolerating one trailing
// slash (Claude Desktop sends one).
func SameResource(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// ConnectedClient is one client a person allowed to act for them.
type ConnectedClient struct {
	ID          string     `json:"id"`
	ClientName  string     `json:"client_name"`
	ClientID    string     `json:"client_id"`
	Scope       string     `json:"scope"`
	ConnectedAt time.Time  `json:"connected_at"`
	LastUsedAt  *time.Time `json:"last_refreshed_at,omitempty"`
	ThisOne     bool       `json:"this_connection,omitempty"`
}

// ConnectedClients lists the clients the caller signed in with OAuth.
type ConnectedClients struct {
	Clients  []ConnectedClient `json:"clients"`
	NextStep string            `json:"next_step"`
}

// ListConnectedClients returns the caller's live grants, newest first.
func (s *Service) ListConnectedClients(ctx context.Context, cred Credentials) (ConnectedClients, error) {
	var out ConnectedClients
	err := s.store.View(ctx, func(q db.Queries) error {
		c, err := s.authenticate(ctx, q, cred)
		if err != nil {
			return err
		}
		gs, err := q.ListOAuthGrants(ctx, c.user.OrgID, c.user.ID)
		if err != nil {
			return err
		}
		out.Clients = make([]ConnectedClient, 0, len(gs))
		for _, g := range gs {
			out.Clients = append(out.Clients, ConnectedClient{
				ID: g.ID, ClientName: g.ClientName, ClientID: g.ClientID, Scope: g.Scope, ConnectedAt: g.CreatedAt,
				LastUsedAt: g.LastUsedAt, ThisOne: c.token.GrantID != nil && *c.token.GrantID == g.ID,
			})
		}
		return nil
	})
	if err != nil {
		return ConnectedClients{}, err
	}
	out.NextStep = "To disconnect one, call revoke_connected_client with its id."
	if len(out.Clients) == 0 {
		out.NextStep = "No client is connected through OAuth sign-in."
	}
	return out, nil
}

// RevokeResult reports a disconnected client.
type RevokeResult struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// RevokeConnectedClient revokes one of the caller's grants and every token
// issued through it, on every replica at once.
func (s *Service) RevokeConnectedClient(ctx context.Context, cred Credentials, idArg string) (RevokeResult, error) {
	id := strings.TrimSpace(idArg)
	if id == "" || len(id) > MaxIDLen {
		return RevokeResult{}, badInput("id is required: call list_connected_clients to see the ids")
	}
	err := s.store.InTx(ctx, func(q db.Queries) error {
		c, err := s.authenticate(ctx, q, cred)
		if err != nil {
			return err
		}
		n, err := q.RevokeOAuthGrant(ctx, c.user.OrgID, c.user.ID, id, s.clock())
		if err != nil {
			return err
		}
		if n == 0 {
			return errorf(KindNotFound, "you have no connected client %s: call list_connected_clients to see the ids", quoteShort(id))
		}
		return s.auditRevoke(ctx, q, c, TokenKindOAuth, id)
	})
	if err != nil {
		return RevokeResult{}, err
	}
	return RevokeResult{ID: id, Status: "disconnected: its tokens no longer work; it must sign in again"}, nil
}

// pkceMatches checks a PKCE S256 verifier against the stored challenge.
func pkceMatches(challenge, verifier string) bool {
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}

// validVerifier checks RFC 7636 §4.1's code_verifier syntax.
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for _, c := range []byte(v) {
		ok := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
		if !ok {
			return false
		}
	}
	return true
}

// ValidChallenge checks an S256 code_challenge's syntax: base64url of 32 bytes.
func ValidChallenge(c string) bool {
	b, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil && len(b) == sha256.Size
}

// newSecret returns a fresh 256-bit secret with a prefix, and its stored hash.
func newSecret(prefix string) (string, []byte) {
	b := make([]byte, 32)
	rand.Read(b)
	s := prefix + base64.RawURLEncoding.EncodeToString(b)
	return s, hashToken(s)
}

// randomID returns n random lowercase letters and digits.
func randomID(n int) string {
	const alphabet = "abcdefghijkmnpqrstuvwxyz23456789"
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
