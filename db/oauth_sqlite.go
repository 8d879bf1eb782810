package db

import (
	"context"
	"time"

	"github.com/ctalk/ctalk/db/internal/sqlitedb"
)

func (a sqliteQueries) CreateOAuthClient(ctx context.Context, c OAuthClient) error {
	uris, err := encodeRedirectURIs(c.RedirectURIs)
	if err != nil {
		return err
	}
	return sqliteError(a.q.CreateOAuthClient(ctx, sqlitedb.CreateOAuthClientParams{
		ID: c.ID, Name: c.Name, RedirectUris: uris, CreatedAt: c.CreatedAt,
	}))
}

func (a sqliteQueries) GetOAuthClient(ctx context.Context, id string) (OAuthClient, error) {
	r, err := a.q.GetOAuthClient(ctx, id)
	if err != nil {
		return OAuthClient{}, sqliteError(err)
	}
	uris, err := decodeRedirectURIs(r.ID, r.RedirectUris)
	if err != nil {
		return OAuthClient{}, err
	}
	return OAuthClient{ID: r.ID, Name: r.Name, RedirectURIs: uris, CreatedAt: r.CreatedAt}, nil
}

func (a sqliteQueries) CreateOAuthGrant(ctx context.Context, g OAuthGrant) error {
	return sqliteError(a.q.CreateOAuthGrant(ctx, sqlitedb.CreateOAuthGrantParams(g)))
}

func (a sqliteQueries) GetOAuthGrant(ctx context.Context, id string) (OAuthGrant, error) {
	g, err := a.q.GetOAuthGrant(ctx, id)
	return OAuthGrant(g), sqliteError(err)
}

func (a sqliteQueries) ListOAuthGrants(ctx context.Context, orgID, userID string) ([]OAuthGrant, error) {
	rows, err := a.q.ListOAuthGrants(ctx, sqlitedb.ListOAuthGrantsParams{OrgID: orgID, UserID: userID})
	return convertAll(rows, func(g sqlitedb.OauthGrant) OAuthGrant { return OAuthGrant(g) }), sqliteError(err)
}

func (a sqliteQueries) TouchOAuthGrant(ctx context.Context, id string, at time.Time) error {
	return oneRow(a.q.TouchOAuthGrant(ctx, sqlitedb.TouchOAuthGrantParams{ID: id, LastUsedAt: &at}))(sqliteError)
}

// RevokeOAuthGrant runs its statements in PostgreSQL's order (there, the
// order matters); SQLite's single writer needs none.
func (a sqliteQueries) RevokeOAuthGrant(ctx context.Context, orgID, userID, id string, at time.Time) (int64, error) {
	n, err := a.q.RevokeOAuthGrant(ctx, sqlitedb.RevokeOAuthGrantParams{OrgID: orgID, UserID: userID, ID: id, RevokedAt: &at})
	if err != nil || n == 0 {
		return 0, sqliteError(err)
	}
	if _, err := a.q.SpendGrantRefreshTokens(ctx, sqlitedb.SpendGrantRefreshTokensParams{GrantID: id, UsedAt: &at}); err != nil {
		return 0, sqliteError(err)
	}
	if _, err := a.q.RevokeGrantTokens(ctx, sqlitedb.RevokeGrantTokensParams{GrantID: &id, RevokedAt: &at}); err != nil {
		return 0, sqliteError(err)
	}
	return n, nil
}

func (a sqliteQueries) CreateOAuthCode(ctx context.Context, c OAuthCode) error {
	return sqliteError(a.q.CreateOAuthCode(ctx, sqlitedb.CreateOAuthCodeParams{
		CodeHash: c.CodeHash, GrantID: c.GrantID, RedirectUri: c.RedirectURI, CodeChallenge: c.CodeChallenge,
		CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt, UsedAt: c.UsedAt,
	}))
}

func (a sqliteQueries) GetOAuthCode(ctx context.Context, hash []byte) (OAuthCode, error) {
	c, err := a.q.GetOAuthCode(ctx, hash)
	return OAuthCode{
		CodeHash: c.CodeHash, GrantID: c.GrantID, RedirectURI: c.RedirectUri, CodeChallenge: c.CodeChallenge,
		CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt, UsedAt: c.UsedAt,
	}, sqliteError(err)
}

func (a sqliteQueries) UseOAuthCode(ctx context.Context, hash []byte, at time.Time) (bool, error) {
	n, err := a.q.UseOAuthCode(ctx, sqlitedb.UseOAuthCodeParams{CodeHash: hash, UsedAt: &at})
	return used(n, sqliteError(err), func() error { _, err := a.GetOAuthCode(ctx, hash); return err })
}

func (a sqliteQueries) CreateOAuthRefresh(ctx context.Context, r OAuthRefresh) error {
	return sqliteError(a.q.CreateOAuthRefresh(ctx, sqlitedb.CreateOAuthRefreshParams(r)))
}

func (a sqliteQueries) GetOAuthRefresh(ctx context.Context, hash []byte) (OAuthRefresh, error) {
	r, err := a.q.GetOAuthRefresh(ctx, hash)
	return OAuthRefresh(r), sqliteError(err)
}

func (a sqliteQueries) UseOAuthRefresh(ctx context.Context, hash []byte, at time.Time) (bool, error) {
	n, err := a.q.UseOAuthRefresh(ctx, sqlitedb.UseOAuthRefreshParams{TokenHash: hash, UsedAt: &at})
	return used(n, sqliteError(err), func() error { _, err := a.GetOAuthRefresh(ctx, hash); return err })
}

func (a sqliteQueries) PruneOAuth(ctx context.Context, before time.Time) (int64, error) {
	return sumRows(sqliteError,
		func() (int64, error) { return a.q.PruneOAuthCodes(ctx, before) },
		func() (int64, error) { return a.q.PruneOAuthRefreshTokens(ctx, before) },
		func() (int64, error) { return a.q.PruneRevokedOAuthCodes(ctx, &before) },
		func() (int64, error) { return a.q.PruneRevokedOAuthRefreshTokens(ctx, &before) },
		func() (int64, error) { return a.q.PruneRevokedOAuthGrants(ctx, &before) },
		func() (int64, error) {
			return a.q.PruneUnusedOAuthClients(ctx, sqlitedb.PruneUnusedOAuthClientsParams{Before: before, MaxRows: pruneClientsBatch})
		},
	)
}

// revokeUserGrants is RevokeUserTokens' part for OAuth: the user's grants
// but keep's, then their refresh tokens. It runs before the access tokens
// are revoked, as on PostgreSQL.
func (a sqliteQueries) revokeUserGrants(ctx context.Context, orgID, userID string, keep []byte, at time.Time) error {
	if _, err := a.q.RevokeUserGrants(ctx, sqlitedb.RevokeUserGrantsParams{
		OrgID: orgID, UserID: userID, KeepTokenHash: nonNil(keep), RevokedAt: &at,
	}); err != nil {
		return sqliteError(err)
	}
	_, err := a.q.SpendUserRevokedRefreshTokens(ctx, sqlitedb.SpendUserRevokedRefreshTokensParams{OrgID: orgID, UserID: userID, UsedAt: &at})
	return sqliteError(err)
}
