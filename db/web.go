package db

import (
	"context"
	"time"

	"github.com/ctalk/ctalk/db/internal/pgdb"
	"github.com/ctalk/ctalk/db/internal/sqlitedb"
)

// AskedQuestion is a question a person asked, with the name of whom they asked.
type AskedQuestion struct {
	Message
	RecipientName string
}

// WebQueries are the operations the web pages need beyond the tools'.
type WebQueries interface {
	// ListAsked returns up to limit questions a user asked with id < beforeID,
	// newest first, answered or not.
	ListAsked(ctx context.Context, orgID, fromUserID string, beforeID int64, limit int) ([]AskedQuestion, error)
	// ExtendToken moves a live token's expiry forward to expiresAt (never
	// back); ErrNotFound when the token is revoked or already expires later.
	ExtendToken(ctx context.Context, hash []byte, expiresAt time.Time) error
}

func (a sqliteQueries) ListAsked(ctx context.Context, orgID, fromUserID string, beforeID int64, limit int) ([]AskedQuestion, error) {
	rows, err := a.q.ListAsked(ctx, sqlitedb.ListAskedParams{OrgID: orgID, FromUserID: fromUserID, BeforeID: beforeID, MaxRows: int64(limit)})
	return convertAll(rows, func(r sqlitedb.ListAskedRow) AskedQuestion { return AskedQuestion{Message(r.Message), r.RecipientName} }), sqliteError(err)
}

func (a sqliteQueries) ExtendToken(ctx context.Context, hash []byte, expiresAt time.Time) error {
	return oneRow(a.q.ExtendToken(ctx, sqlitedb.ExtendTokenParams{TokenHash: hash, ExpiresAt: expiresAt}))(sqliteError)
}

func (a pgQueries) ListAsked(ctx context.Context, orgID, fromUserID string, beforeID int64, limit int) ([]AskedQuestion, error) {
	rows, err := a.q.ListAsked(ctx, pgdb.ListAskedParams{OrgID: orgID, FromUserID: fromUserID, BeforeID: beforeID, MaxRows: int32(limit)})
	return convertAll(rows, func(r pgdb.ListAskedRow) AskedQuestion { return AskedQuestion{Message(r.Message), r.RecipientName} }), pgError(err)
}

func (a pgQueries) ExtendToken(ctx context.Context, hash []byte, expiresAt time.Time) error {
	return oneRow(a.q.ExtendToken(ctx, pgdb.ExtendTokenParams{TokenHash: hash, ExpiresAt: expiresAt}))(pgError)
}
