package db

import (
	"context"
	"time"

	"github.com/ctalk/ctalk/db/internal/pgdb"
	"github.com/ctalk/ctalk/db/internal/sqlitedb"
)

// AuditEntry is one event in an organization's audit log. It never holds a
// password, a token or message text.
type AuditEntry struct {
	ID    int64
	OrgID string
	At    time.Time
	// ActorUserID is who acted: empty for the admin password (the MCP admin
	// tools) and for events with no signed-in person.
	ActorUserID  string
	Action       string
	TargetUserID string
	Address      string
	Detail       string
}

// AdminQueries are what the admin console needs beyond the tools'.
type AdminQueries interface {
	// SetUserAdmin grants the admin role at the given time, or takes it back with nil.
	SetUserAdmin(ctx context.Context, orgID, userID string, since *time.Time) error
	UpdateAdminPassword(ctx context.Context, orgID, hash string) error
	// AddAudit records e (its ID is ignored); nothing when its organization does not exist.
	AddAudit(ctx context.Context, e AuditEntry) error
	// ListAudit returns up to limit entries of an organization with id < beforeID, newest first.
	ListAudit(ctx context.Context, orgID string, beforeID int64, limit int) ([]AuditEntry, error)
	// ListOrgTokens returns up to limit live tokens of an organization that
	// belong to no OAuth grant, newest first.
	ListOrgTokens(ctx context.Context, orgID string, now time.Time, limit int) ([]Token, error)
	// ListOrgGrants returns an organization's live OAuth grants, newest first.
	ListOrgGrants(ctx context.Context, orgID string) ([]OAuthGrant, error)
	// ListOrgGrantRefreshes returns the unspent refresh tokens expiring after
	// now of an organization's live grants.
	ListOrgGrantRefreshes(ctx context.Context, orgID string, now time.Time) ([]GrantRefresh, error)
}

func (a sqliteQueries) SetUserAdmin(ctx context.Context, orgID, userID string, since *time.Time) error {
	return oneRow(a.q.SetUserAdmin(ctx, sqlitedb.SetUserAdminParams{AdminSince: since, OrgID: orgID, ID: userID}))(sqliteError)
}

func (a sqliteQueries) UpdateAdminPassword(ctx context.Context, orgID, hash string) error {
	return oneRow(a.q.UpdateAdminPassword(ctx, sqlitedb.UpdateAdminPasswordParams{AdminPasswordHash: hash, ID: orgID}))(sqliteError)
}

func (a sqliteQueries) AddAudit(ctx context.Context, e AuditEntry) error {
	return sqliteError(a.q.AddAudit(ctx, sqlitedb.AddAuditParams{At: e.At, ActorUserID: e.ActorUserID, Action: e.Action,
		TargetUserID: e.TargetUserID, Address: e.Address, Detail: e.Detail, OrgID: e.OrgID}))
}

func (a sqliteQueries) ListAudit(ctx context.Context, orgID string, beforeID int64, limit int) ([]AuditEntry, error) {
	rows, err := a.q.ListAudit(ctx, sqlitedb.ListAuditParams{OrgID: orgID, BeforeID: beforeID, MaxRows: int64(limit)})
	return convertAll(rows, func(r sqlitedb.AuditLog) AuditEntry { return AuditEntry(r) }), sqliteError(err)
}

func (a sqliteQueries) ListOrgTokens(ctx context.Context, orgID string, now time.Time, limit int) ([]Token, error) {
	rows, err := a.q.ListOrgTokens(ctx, sqlitedb.ListOrgTokensParams{OrgID: orgID, Now: now, MaxRows: int64(limit)})
	return convertAll(rows, func(t sqlitedb.AuthToken) Token { return Token(t) }), sqliteError(err)
}

func (a sqliteQueries) ListOrgGrants(ctx context.Context, orgID string) ([]OAuthGrant, error) {
	rows, err := a.q.ListOrgGrants(ctx, orgID)
	return convertAll(rows, func(g sqlitedb.OauthGrant) OAuthGrant { return OAuthGrant(g) }), sqliteError(err)
}

func (a sqliteQueries) ListOrgGrantRefreshes(ctx context.Context, orgID string, now time.Time) ([]GrantRefresh, error) {
	rows, err := a.q.ListOrgGrantRefreshes(ctx, sqlitedb.ListOrgGrantRefreshesParams{OrgID: orgID, Now: now})
	return convertAll(rows, func(r sqlitedb.ListOrgGrantRefreshesRow) GrantRefresh { return GrantRefresh(r) }), sqliteError(err)
}

func (a pgQueries) SetUserAdmin(ctx context.Context, orgID, userID string, since *time.Time) error {
	return oneRow(a.q.SetUserAdmin(ctx, pgdb.SetUserAdminParams{AdminSince: since, OrgID: orgID, ID: userID}))(pgError)
}

func (a pgQueries) UpdateAdminPassword(ctx context.Context, orgID, hash string) error {
	return oneRow(a.q.UpdateAdminPassword(ctx, pgdb.UpdateAdminPasswordParams{AdminPasswordHash: hash, ID: orgID}))(pgError)
}

func (a pgQueries) AddAudit(ctx context.Context, e AuditEntry) error {
	return pgError(a.q.AddAudit(ctx, pgdb.AddAuditParams{At: e.At, ActorUserID: e.ActorUserID, Action: e.Action,
		TargetUserID: e.TargetUserID, Address: e.Address, Detail: e.Detail, OrgID: e.OrgID}))
}

func (a pgQueries) ListAudit(ctx context.Context, orgID string, beforeID int64, limit int) ([]AuditEntry, error) {
	rows, err := a.q.ListAudit(ctx, pgdb.ListAuditParams{OrgID: orgID, BeforeID: beforeID, MaxRows: int32(limit)})
	return convertAll(rows, func(r pgdb.AuditLog) AuditEntry { return AuditEntry(r) }), pgError(err)
}

func (a pgQueries) ListOrgTokens(ctx context.Context, orgID string, now time.Time, limit int) ([]Token, error) {
	rows, err := a.q.ListOrgTokens(ctx, pgdb.ListOrgTokensParams{OrgID: orgID, Now: now, MaxRows: int32(limit)})
	return convertAll(rows, func(t pgdb.AuthToken) Token { return Token(t) }), pgError(err)
}

func (a pgQueries) ListOrgGrants(ctx context.Context, orgID string) ([]OAuthGrant, error) {
	rows, err := a.q.ListOrgGrants(ctx, orgID)
	return convertAll(rows, func(g pgdb.OauthGrant) OAuthGrant { return OAuthGrant(g) }), pgError(err)
}

func (a pgQueries) ListOrgGrantRefreshes(ctx context.Context, orgID string, now time.Time) ([]GrantRefresh, error) {
	rows, err := a.q.ListOrgGrantRefreshes(ctx, pgdb.ListOrgGrantRefreshesParams{OrgID: orgID, Now: now})
	return convertAll(rows, func(r pgdb.ListOrgGrantRefreshesRow) GrantRefresh { return GrantRefresh(r) }), pgError(err)
}
