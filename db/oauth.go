package db

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// OAuthClient is a client registered through Dynamic Client Registration
// (RFC 7591). Clients identified by a metadata document URL are not stored.
type OAuthClient struct {
	ID           string
	Name         string
	RedirectURIs []string
	CreatedAt    time.Time
}

// OAuthGrant is one connected client of one person: the family of the
// codes, access tokens and refresh tokens issued to it.
type OAuthGrant struct {
	ID         string
	OrgID      string
	UserID     string
	ClientID   string
	ClientName string
	Resource   string
	Scope      string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// OAuthCode is an authorization code: only the SHA-256 hash of the secret is kept.
type OAuthCode struct {
	CodeHash      []byte
	GrantID       string
	RedirectURI   string
	CodeChallenge string
	CreatedAt     time.Time
	ExpiresAt     time.Time
	UsedAt        *time.Time
}

// OAuthRefresh is a refresh token: only the SHA-256 hash of the secret is kept.
type OAuthRefresh struct {
	TokenHash []byte
	GrantID   string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

// OAuthQueries are the OAuth sign-in's operations, part of Queries. Access
// tokens are Tokens with a GrantID (CreateToken, GetTokenUser).
type OAuthQueries interface {
	// CreateOAuthClient stores a registered client; ErrConflict if its id exists.
	CreateOAuthClient(ctx context.Context, c OAuthClient) error
	// GetOAuthClient returns a registered client or ErrNotFound.
	GetOAuthClient(ctx context.Context, id string) (OAuthClient, error)

	// CreateOAuthGrant stores a grant; ErrConflict if its id exists,
	// ErrNotFound if its user does not.
	CreateOAuthGrant(ctx context.Context, g OAuthGrant) error
	// GetOAuthGrant returns a grant, revoked or not, or ErrNotFound.
	GetOAuthGrant(ctx context.Context, id string) (OAuthGrant, error)
	// ListOAuthGrants returns a user's grants that are not revoked, newest first.
	ListOAuthGrants(ctx context.Context, orgID, userID string) ([]OAuthGrant, error)
	// TouchOAuthGrant sets a live grant's last use; ErrNotFound if the grant
	// does not exist or is revoked. On PostgreSQL it takes the grant's row
	// lock: a token issued after it in the same transaction cannot outlive a
	// revocation running at the same time (the touch waits for it and then
	// fails).
	TouchOAuthGrant(ctx context.Context, id string, at time.Time) error
	// RevokeOAuthGrant revokes a user's live grant, its live access tokens,
	// and marks its refresh tokens used so that none can be redeemed. It
	// returns 1, or 0 (and changes nothing) if the grant is already revoked,
	// does not exist, or belongs to another user.
	RevokeOAuthGrant(ctx context.Context, orgID, userID, id string, at time.Time) (int64, error)

	// CreateOAuthCode stores a code; ErrNotFound if its grant does not exist.
	CreateOAuthCode(ctx context.Context, c OAuthCode) error
	// GetOAuthCode returns a code, used or not, or ErrNotFound.
	GetOAuthCode(ctx context.Context, hash []byte) (OAuthCode, error)
	// UseOAuthCode marks an unused code used: true if this call did, false if
	// it was already used (a replay, or a race lost); ErrNotFound if there is
	// no such code. It does not look at expiry.
	UseOAuthCode(ctx context.Context, hash []byte, at time.Time) (bool, error)

	// CreateOAuthRefresh stores a refresh token; ErrNotFound if its grant does not exist.
	CreateOAuthRefresh(ctx context.Context, r OAuthRefresh) error
	// GetOAuthRefresh returns a refresh token, used or not, or ErrNotFound.
	GetOAuthRefresh(ctx context.Context, hash []byte) (OAuthRefresh, error)
	// UseOAuthRefresh marks an unused refresh token used, like UseOAuthCode.
	UseOAuthRefresh(ctx context.Context, hash []byte, at time.Time) (bool, error)

	// PruneOAuth deletes the codes and refresh tokens that expired before
	// before, the grants revoked before it with their codes and refresh
	// tokens, and up to pruneClientsBatch registered clients older than
	// before that no grant names, returning how many rows it deleted.
	// (Access tokens keep their grant id.)
	PruneOAuth(ctx context.Context, before time.Time) (int64, error)
}

// pruneClientsBatch bounds the unused registered clients one PruneOAuth
// deletes; every registration runs one, so a flood is swept as it comes.
const pruneClientsBatch = 100

// encodeRedirectURIs stores redirect URIs as a JSON array.
func encodeRedirectURIs(uris []string) (string, error) {
	if uris == nil {
		uris = []string{}
	}
	b, err := json.Marshal(uris)
	return string(b), err
}

// decodeRedirectURIs reads what encodeRedirectURIs stored.
func decodeRedirectURIs(clientID, s string) ([]string, error) {
	var uris []string
	if err := json.Unmarshal([]byte(s), &uris); err != nil {
		return nil, fmt.Errorf("oauth_clients row %q: redirect_uris is not a JSON array of strings: %w", clientID, err)
	}
	return uris, nil
}

// used turns the rows an exec of UseOAuthCode or UseOAuthRefresh changed
// into its answer: true if it marked the row, false if the row was already
// used, and ErrNotFound (from exists) if there is no row.
func used(n int64, err error, exists func() error) (bool, error) {
	if err != nil {
		return false, err
	}
	if n > 0 {
		return true, nil
	}
	return false, exists()
}

// sumRows adds the row counts of several :execrows statements run in turn,
// stopping at the first error.
func sumRows(mapErr func(error) error, steps ...func() (int64, error)) (int64, error) {
	var total int64
	for _, step := range steps {
		n, err := step()
		if err != nil {
			return total, mapErr(err)
		}
		total += n
	}
	return total, nil
}
