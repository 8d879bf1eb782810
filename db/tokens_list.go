package db

import (
	"context"
	"time"

	"github.com/ctalk/ctalk/db/internal/pgdb"
	"github.com/ctalk/ctalk/db/internal/sqlitedb"
)

// GrantRefresh is the expiry of one unspent refresh token of a grant.
type GrantRefresh struct {
	GrantID   string
	ExpiresAt time.Time
}

// TokenListQueries are what the "Connected clients and tokens" page reads.
type TokenListQueries interface {
	// ListUserTokens returns up to limit of a user's live tokens (not
	// revoked, expiring after now) that belong to no OAuth grant: login
	// tokens and web sessions, newest first.
	ListUserTokens(ctx context.Context, orgID, userID string, now time.Time, limit int) ([]Token, error)
	// ListUserGrantRefreshes returns the unspent refresh tokens expiring
	// after now of a user's live grants.
	ListUserGrantRefreshes(ctx context.Context, orgID, userID string, now time.Time) ([]GrantRefresh, error)
}

func (a sqliteQueries) ListUserTokens(ctx context.Context, orgID, userID string, now time.Time, limit int) ([]Token, error) {
	rows, err := a.q.ListUserTokens(ctx, sqlitedb.ListUserTokensParams{OrgID: orgID, UserID: userID, Now: now, MaxRows: int64(limit)})
	return convertAll(rows, func(t sqlitedb.AuthToken) Token { return Token(t) }), sqliteError(err)
}

func (a sqliteQueries) ListUserGrantRefreshes(ctx context.Context, orgID, userID string, now time.Time) ([]GrantRefresh, error) {
	rows, err := a.q.ListUserGrantRefreshes(ctx, sqlitedb.ListUserGrantRefreshesParams{OrgID: orgID, UserID: userID, Now: now})
	return convertAll(rows, func(r sqlitedb.ListUserGrantRefreshesRow) GrantRefresh { return GrantRefresh(r) }), sqliteError(err)
}

func (a pgQueries) ListUserTokens(ctx context.Context, orgID, userID string, now time.Time, limit int) ([]Token, error) {
	rows, err := a.q.ListUserTokens(ctx, pgdb.ListUserTokensParams{OrgID: orgID, UserID: userID, Now: now, MaxRows: int32(limit)})
	return convertAll(rows, func(t pgdb.AuthToken) Token { return Token(t) }), pgError(err)
}

func (a pgQueries) ListUserGrantRefreshes(ctx context.Context, orgID, userID string, now time.Time) ([]GrantRefresh, error) {
	rows, err := a.q.ListUserGrantRefreshes(ctx, pgdb.ListUserGrantRefreshesParams{OrgID: orgID, UserID: userID, Now: now})
	return convertAll(rows, func(r pgdb.ListUserGrantRefreshesRow) GrantRefresh { return GrantRefresh(r) }), pgError(err)
}
