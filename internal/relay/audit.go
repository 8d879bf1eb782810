package relay

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
)

// The audit log records, in the transaction that does it, every admin
// action, sign-in, sign-in lock and token revocation of an organization:
// who, when, from which address and what. It never holds a password, a
// token or message text: details are built here from ids, names and counts.

// Audit actions.
const (
	AuditRegister       = "user.register"
	AuditDeactivate     = "user.deactivate"
	AuditReactivate     = "user.reactivate"
	AuditPasswordReset  = "user.password_reset"
	AuditProfileNotes   = "user.profile_notes"
	AuditRoleGrant      = "admin.role_grant"
	AuditRoleRevoke     = "admin.role_revoke"
	AuditAdminPassword  = "admin.password_change"
	AuditSignIn         = "signin"
	AuditSignInLocked   = "signin.locked"
	AuditAdminLocked    = "admin_password.locked"
	AuditPasswordChange = "user.password_change"
	AuditTokenRevoke    = "token.revoke"
	AuditExport         = "org.export"
)

// auditPage is how many entries one page of the audit log shows.
const auditPage = 100

// clientAddr is the caller's network address as the audit log shows it.
func clientAddr(ctx context.Context) string {
	if a, _ := ctx.Value(clientAddrKey{}).(string); a != "" {
		return a
	}
	return "local"
}

// audit records one event of orgID in q's transaction.
func (s *Service) audit(ctx context.Context, q db.Queries, orgID, actor, action, target, detail string) error {
	return q.AddAudit(ctx, db.AuditEntry{OrgID: orgID, At: s.clock(), ActorUserID: actor, Action: action,
		TargetUserID: target, Address: clientAddr(ctx), Detail: detail})
}

// auditLock records a sign-in lock set on a throttle key of an account (a
// person's password or an organization's admin password); address locks
// belong to no organization and are not recorded.
func (s *Service) auditLock(ctx context.Context, q db.Queries, key string, failures int64, d time.Duration) error {
	detail := fmt.Sprintf("locked for %s after %d failed attempts", d.Round(time.Second), failures)
	if org, user, ok := strings.Cut(strings.TrimPrefix(key, "user:"), "/"); ok && strings.HasPrefix(key, "user:") {
		return s.audit(ctx, q, org, "", AuditSignInLocked, user, detail)
	}
	if org, ok := strings.CutPrefix(key, "admin:"); ok {
		return s.audit(ctx, q, org, "", AuditAdminLocked, "", detail)
	}
	return nil
}

// auditRevoke records that the caller revoked one of their own tokens (of
// kind), or their OAuth connection grantID.
func (s *Service) auditRevoke(ctx context.Context, q db.Queries, c caller, kind, grantID string) error {
	name := ""
	if kind == TokenKindOAuth {
		g, err := q.GetOAuthGrant(ctx, grantID)
		if err != nil {
			return err
		}
		name = g.ClientName
	}
	return s.audit(ctx, q, c.user.OrgID, c.user.ID, AuditTokenRevoke, c.user.ID, revokedDetail(kind, name))
}

// revokedDetail names what a revocation ended, for the audit log.
func revokedDetail(kind, clientName string) string {
	switch kind {
	case TokenKindOAuth:
		return "connected client " + quoteShort(clientName)
	case TokenKindWeb:
		return "web session"
	}
	return "login token"
}

// revokedCount says how many tokens an action revoked, for the audit log.
func revokedCount(n int64) string {
	if n == 1 {
		return "1 token revoked"
	}
	return fmt.Sprintf("%d tokens revoked", n)
}

// AuditEntry is one event of the audit log as the admin console shows it.
type AuditEntry struct {
	ID int64
	At time.Time
	// Actor is who acted ("" for the admin password, or no signed-in person).
	Actor   string
	Action  string
	Target  string
	Address string
	Detail  string
}

// AuditPage is one page of the audit log, newest first.
type AuditPage struct {
	Entries []AuditEntry
	// NextBefore, when not 0, is the beforeID of the next (older) page.
	NextBefore int64
}

// ListAudit returns the organization's audit log, newest first, from the
// entry before beforeID (0: the newest), to an admin.
func (s *Service) ListAudit(ctx context.Context, a Admin, beforeID int64) (AuditPage, error) {
	if beforeID <= 0 {
		beforeID = 1<<63 - 1
	}
	var out AuditPage
	err := s.store.View(ctx, func(q db.Queries) error {
		auth, err := s.viewAdmin(ctx, q, a)
		if err != nil {
			return err
		}
		rows, err := q.ListAudit(ctx, auth.org.ID, beforeID, auditPage+1)
		if err != nil {
			return err
		}
		if len(rows) > auditPage {
			rows = rows[:auditPage]
			out.NextBefore = rows[len(rows)-1].ID
		}
		out.Entries = make([]AuditEntry, 0, len(rows))
		for _, r := range rows {
			out.Entries = append(out.Entries, AuditEntry{ID: r.ID, At: r.At, Actor: r.ActorUserID, Action: r.Action,
				Target: r.TargetUserID, Address: r.Address, Detail: r.Detail})
		}
		return nil
	})
	return out, err
}

// viewAdmin authorizes a read-only admin page: only a session holding the
// admin role (reads are never worth an admin password's hash).
func (s *Service) viewAdmin(ctx context.Context, q db.Queries, a Admin) (adminAuth, error) {
	if a.Session == nil {
		return adminAuth{}, errNotAdmin
	}
	return s.sessionAdmin(ctx, q, *a.Session)
}
