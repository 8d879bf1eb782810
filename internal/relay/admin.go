package relay

import (
	"context"
	"errors"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Admin is what authorizes an admin action: an organization's id and admin
// password (the MCP admin tools), or Session, the credentials of a signed-in
// person who holds the organization's admin role (the web admin console),
// so admin work never needs the admin password in a conversation.
type Admin struct {
	OrgID    string
	Password string
	// Session, when set, authorizes instead of OrgID and Password.
	Session *Credentials
}

// adminAuth is a verified admin: the organization, and the person acting
// (zero for the admin password).
type adminAuth struct {
	org   db.Organization
	actor db.User
	cred  *Credentials
}

// actorID is who the audit log records as acting: "" for the admin password.
func (a adminAuth) actorID() string { return a.actor.ID }

// errNotAdmin refuses a signed-in person without the admin role.
var errNotAdmin = &Error{Kind: KindForbidden, msg: "you are not an admin of this organization: " +
	"an admin can give you the role, or enter the organization's admin password once on the admin page"}

// adminCheck verifies an admin: the admin password (unknown organizations
// cost the same hash as a wrong password and give the same error), or a
// session whose person holds the admin role.
func (s *Service) adminCheck(ctx context.Context, a Admin) (adminAuth, error) {
	if a.Session != nil {
		var auth adminAuth
		err := s.store.View(ctx, func(q db.Queries) (err error) {
			auth, err = s.sessionAdmin(ctx, q, *a.Session)
			return err
		})
		return auth, err
	}
	orgID, err := slug("org_id", a.OrgID)
	if err != nil {
		return adminAuth{}, err
	}
	if a.Password == "" {
		return adminAuth{}, badInput("admin_password is required")
	}
	var org db.Organization
	err = s.store.View(ctx, func(q db.Queries) (err error) {
		org, err = q.GetOrganization(ctx, orgID)
		return err
	})
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		return adminAuth{}, err
	}
	ok, err := s.checkPassword(ctx, adminKey(orgID), org.AdminPasswordHash, a.Password, err == nil)
	if err != nil {
		return adminAuth{}, err
	}
	if !ok {
		return adminAuth{}, errBadAdmin
	}
	s.verified()
	return adminAuth{org: org}, nil
}

// sessionAdmin authenticates cred and requires its person to hold the admin role.
func (s *Service) sessionAdmin(ctx context.Context, q db.Queries, cred Credentials) (adminAuth, error) {
	c, err := s.authenticate(ctx, q, cred)
	if err != nil {
		return adminAuth{}, err
	}
	if c.user.AdminSince == nil {
		return adminAuth{}, errNotAdmin
	}
	org, err := q.GetOrganization(ctx, c.user.OrgID)
	if err != nil {
		return adminAuth{}, err
	}
	return adminAuth{org: org, actor: c.user, cred: &cred}, nil
}

// sameAdmin checks, inside the transaction that acts on an admin check, that
// the admin is still one: the admin password hash is still the one
// verified, or the session still works and its person still holds the role.
func (s *Service) sameAdmin(ctx context.Context, q db.Queries, verified adminAuth) error {
	if verified.cred != nil {
		_, err := s.sessionAdmin(ctx, q, *verified.cred)
		return err
	}
	org, err := q.GetOrganization(ctx, verified.org.ID)
	if errors.Is(err, db.ErrNotFound) || (err == nil && org.AdminPasswordHash != verified.org.AdminPasswordHash) {
		return errBadAdmin
	}
	return err
}

// adminUpdate checks the admin password, then runs prepare (work that must
// not happen for a caller who fails the check, such as hashing), then fn on
// the named user in one transaction, and returns the user as fn left them.
func (s *Service) adminUpdate(ctx context.Context, a Admin, userIDArg string, prepare func() error,
	fn func(q db.Queries, u db.User, now time.Time, actor string) error) (db.User, error) {
	userID, err := slug("user_id", userIDArg)
	if err != nil {
		return db.User{}, err
	}
	// A place in the password queue, held for the admin password's check
	// and prepare's hash: an admin acting by session with nothing to hash
	// needs none, so a flood of password checks cannot hold them up.
	if a.Session == nil || prepare != nil {
		var release func()
		if ctx, release, err = s.passwordTurn(ctx); err != nil {
			return db.User{}, err
		}
		defer release()
	}
	auth, err := s.adminCheck(ctx, a)
	if err != nil {
		return db.User{}, err
	}
	org := auth.org
	if prepare != nil {
		if err := prepare(); err != nil {
			return db.User{}, err
		}
	}
	var u db.User
	err = s.store.InTx(ctx, func(q db.Queries) error {
		if err := s.sameAdmin(ctx, q, auth); err != nil {
			return err
		}
		if u, err = q.LockUser(ctx, org.ID, userID); err != nil {
			return err
		}
		if fn != nil {
			if err := fn(q, u, s.clock(), auth.actorID()); err != nil {
				return err
			}
		}
		u, err = q.GetUser(ctx, org.ID, userID)
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		return db.User{}, errorf(KindNotFound, "no user %q in organization %q: list_users shows who is registered", userID, org.ID)
	}
	return u, err
}

// UpdateUserProfileNotes replaces the notes the organization keeps about a person.
func (s *Service) UpdateUserProfileNotes(ctx context.Context, a Admin, userID, notesArg string) (Profile, error) {
	if _, err := slug("user_id", userID); err != nil {
		return Profile{}, err
	}
	notes, err := text("profile_notes", notesArg, false, MaxNotesLen)
	if err != nil {
		return Profile{}, err
	}
	u, err := s.adminUpdate(ctx, a, userID, nil, func(q db.Queries, u db.User, _ time.Time, actor string) error {
		if err := q.UpdateUserProfileNotes(ctx, u.OrgID, u.ID, notes); err != nil {
			return err
		}
		return s.audit(ctx, q, u.OrgID, actor, AuditProfileNotes, u.ID, "")
	})
	if err != nil {
		return Profile{}, err
	}
	return profileOf(u), nil
}

// ResetUserPassword sets a new password for a person and revokes every token of theirs.
func (s *Service) ResetUserPassword(ctx context.Context, a Admin, userID, newPassword string) (PasswordResult, error) {
	if err := password("new_password", newPassword, MinUserPassLen); err != nil {
		return PasswordResult{}, err
	}
	var hash string
	hashNew := func() (err error) {
		hash, err = s.hash.Hash(ctx, newPassword)
		return err
	}
	var revoked int64
	u, err := s.adminUpdate(ctx, a, userID, hashNew, func(q db.Queries, u db.User, now time.Time, actor string) error {
		if err := q.UpdateUserPassword(ctx, u.OrgID, u.ID, hash); err != nil {
			return err
		}
		var err error
		if revoked, err = q.RevokeUserTokens(ctx, u.OrgID, u.ID, nil, now); err != nil {
			return err
		}
		if err := q.ClearThrottle(ctx, userKey(u.OrgID, u.ID)); err != nil {
			return err
		}
		return s.audit(ctx, q, u.OrgID, actor, AuditPasswordReset, u.ID, revokedCount(revoked))
	})
	if err != nil {
		return PasswordResult{}, err
	}
	return PasswordResult{UserID: u.ID, Status: "password reset; every token of the user was revoked", TokensRevoked: revoked}, nil
}

// DeactivateUser stops a person from logging in or using any token.
func (s *Service) DeactivateUser(ctx context.Context, a Admin, userID string) (Profile, error) {
	u, err := s.adminUpdate(ctx, a, userID, nil, func(q db.Queries, u db.User, now time.Time, actor string) error {
		if u.DeactivatedAt != nil {
			return nil
		}
		if err := q.SetUserDeactivated(ctx, u.OrgID, u.ID, &now); err != nil {
			return err
		}
		revoked, err := q.RevokeUserTokens(ctx, u.OrgID, u.ID, nil, now)
		if err != nil {
			return err
		}
		return s.audit(ctx, q, u.OrgID, actor, AuditDeactivate, u.ID, revokedCount(revoked))
	})
	if err != nil {
		return Profile{}, err
	}
	res := profileOf(u)
	res.NextStep = "The user can no longer log in or use any token; their questions and answers stay. reactivate_user undoes this."
	return res, nil
}

// ReactivateUser lets a deactivated person log in again; old tokens stay revoked.
func (s *Service) ReactivateUser(ctx context.Context, a Admin, userID string) (Profile, error) {
	u, err := s.adminUpdate(ctx, a, userID, nil, func(q db.Queries, u db.User, now time.Time, actor string) error {
		if err := q.SetUserDeactivated(ctx, u.OrgID, u.ID, nil); err != nil {
			return err
		}
		// Attempts made while deactivated do not count against them.
		if err := q.ClearThrottle(ctx, userKey(u.OrgID, u.ID)); err != nil || u.DeactivatedAt == nil {
			return err
		}
		return s.audit(ctx, q, u.OrgID, actor, AuditReactivate, u.ID, "")
	})
	if err != nil {
		return Profile{}, err
	}
	res := profileOf(u)
	res.NextStep = "The user can log in again; their old tokens stay revoked."
	return res, nil
}
