package db

import (
	"context"
	"time"

	"github.com/ctalk/ctalk/db/internal/pgdb"
)

func (a pgQueries) CreateOAuthClient(ctx context.Context, c OAuthClient) error {
	uris, err := encodeRedirectURIs(c.RedirectURIs)
	if err != nil {
		return err
	}
	return pgError(a.q.CreateOAuthClient(ctx, pgdb.CreateOAuthClientParams{
		ID: c.ID, Name: c.Name, RedirectUris: uris, CreatedAt: c.CreatedAt,
	}))
}

func (a pgQueries) GetOAuthClient(ctx context.Context, id string) (OAuthClient, error) {
	r, err := a.q.GetOAuthClient(ctx, id)
	if err != nil {
		return OAuthClient{}, pgError(err)
	}
	uris, err := decodeRedirectURIs(r.ID, r.RedirectUris)
	if err != nil {
		return OAuthClient{}, err
	}
	return OAuthClient{ID: r.ID, Name: r.Name, RedirectURIs: uris, CreatedAt: r.CreatedAt}, nil
}

func (a pgQueries) CreateOAuthGrant(ctx context.Context, g OAuthGrant) error {
	return pgError(a.q.CreateOAuthGrant(ctx, pgdb.CreateOAuthGrantParams(g)))
}

func (a pgQueries) GetOAuthGrant(ctx context.Context, id string) (OAuthGrant, error) {
	g, err := a.q.GetOAuthGrant(ctx, id)
	return OAuthGrant(g), pgError(err)
}

func (a pgQueries) ListOAuthGrants(ctx context.Context, orgID, userID string) ([]OAuthGrant, error) {
	rows, err := a.q.ListOAuthGrants(ctx, pgdb.ListOAuthGrantsParams{OrgID: orgID, UserID: userID})
	return convertAll(rows, func(g pgdb.OauthGrant) OAuthGrant { return OAuthGrant(g) }), pgError(err)
}

func (a pgQueries) TouchOAuthGrant(ctx context.Context, id string, at time.Time) error {
	return oneRow(a.q.TouchOAuthGrant(ctx, pgdb.TouchOAuthGrantParams{ID: id, LastUsedAt: &at}))(pgError)
}

// RevokeOAuthGrant revokes the grant first: its row lock orders it after (or
// before) a refresh that touched the grant, so every token that refresh
// issued is seen by the statements after it.
func (a pgQueries) RevokeOAuthGrant(ctx context.Context, orgID, userID, id string, at time.Time) (int64, error) {
	n, err := a.q.RevokeOAuthGrant(ctx, pgdb.RevokeOAuthGrantParams{OrgID: orgID, UserID: userID, ID: id, RevokedAt: &at})
	if err != nil || n == 0 {
		return 0, pgError(err)
	}
	if _, err := a.q.SpendGrantRefreshTokens(ctx, pgdb.SpendGrantRefreshTokensParams{GrantID: id, UsedAt: &at}); err != nil {
		return 0, pgError(err)
	}
	if _, err := a.q.RevokeGrantTokens(ctx, pgdb.RevokeGrantTokensParams{GrantID: &id, RevokedAt: &at}); err != nil {
		return 0, pgError(err)
	}
	return n, nil
}

func (a pgQueries) CreateOAuthCode(ctx context.Context, c OAuthCode) error {
	return pgError(a.q.CreateOAuthCode(ctx, pgdb.CreateOAuthCodeParams{
		CodeHash: c.CodeHash, GrantID: c.GrantID, RedirectUri: c.RedirectURI, CodeChallenge: c.CodeChallenge,
		CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt, UsedAt: c.UsedAt,
	}))
}

func (a pgQueries) GetOAuthCode(ctx context.Context, hash []byte) (OAuthCode, error) {
	c, err := a.q.GetOAuthCode(ctx, hash)
	return OAuthCode{
		CodeHash: c.CodeHash, GrantID: c.GrantID, RedirectURI: c.RedirectUri, CodeChallenge: c.CodeChallenge,
		CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt, UsedAt: c.UsedAt,
	}, pgError(err)
}

func (a pgQueries) UseOAuthCode(ctx context.Context, hash []byte, at time.Time) (bool, error) {
	n, err := a.q.UseOAuthCode(ctx, pgdb.UseOAuthCodeParams{CodeHash: hash, UsedAt: &at})
	return used(n, pgError(err), func() error { _, err := a.GetOAuthCode(ctx, hash); return err })
}

func (a pgQueries) CreateOAuthRefresh(ctx context.Context, r OAuthRefresh) error {
	return pgError(a.q.CreateOAuthRefresh(ctx, pgdb.CreateOAuthRefreshParams(r)))
}

func (a pgQueries) GetOAuthRefresh(ctx context.Context, hash []byte) (OAuthRefresh, error) {
	r, err := a.q.GetOAuthRefresh(ctx, hash)
	return OAuthRefresh(r), pgError(err)
}

func (a pgQueries) UseOAuthRefresh(ctx context.Context, hash []byte, at time.Time) (bool, error) {
	n, err := a.q.UseOAuthRefresh(ctx, pgdb.UseOAuthRefreshParams{TokenHash: hash, UsedAt: &at})
	return used(n, pgError(err), func() error { _, err := a.GetOAuthRefresh(ctx, hash); return err })
}

func (a pgQueries) PruneOAuth(ctx context.Context, before time.Time) (int64, error) {
	return sumRows(pgError,
		func() (int64, error) { return a.q.PruneOAuthCodes(ctx, before) },
		func() (int64, error) { return a.q.PruneOAuthRefreshTokens(ctx, before) },
		func() (int64, error) { return a.q.PruneRevokedOAuthCodes(ctx, &before) },
		func() (int64, error) { return a.q.PruneRevokedOAuthRefreshTokens(ctx, &before) },
		func() (int64, error) { return a.q.PruneRevokedOAuthGrants(ctx, &before) },
		func() (int64, error) {
			return a.q.PruneUnusedOAuthClients(ctx, pgdb.PruneUnusedOAuthClientsParams{Before: before, MaxRows: pruneClientsBatch})
		},
	)
}

// revokeUserGrants is RevokeUserTokens' part for OAuth: the user's grants
// but keep's, then their refresh tokens. It runs before the access tokens
// are revoked, for the reason RevokeOAuthGrant gives.
func (a pgQueries) revokeUserGrants(ctx context.Context, orgID, userID string, keep []byte, at time.Time) error {
	if _, err := a.q.RevokeUserGrants(ctx, pgdb.RevokeUserGrantsParams{
		OrgID: orgID, UserID: userID, KeepTokenHash: nonNil(keep), RevokedAt: &at,
	}); err != nil {
		return pgError(err)
	}
	_, err := a.q.SpendUserRevokedRefreshTokens(ctx, pgdb.SpendUserRevokedRefreshTokensParams{OrgID: orgID, UserID: userID, UsedAt: &at})
	return pgError(err)
}
