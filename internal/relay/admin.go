package relay

import (
	"context"
	"errors"
	"time"

	"github.com/ctalk/ctalk/db"
)

// Admin is an organization's id and admin password: what every admin
// action is authorized by.
type Admin struct {
	OrgID    string
	Password string
}

// adminCheck verifies an organization's admin password. Unknown organizations
// cost the same hash as a wrong password and give the same error.
func (s *Service) adminCheck(ctx context.Context, a Admin) (db.Organization, error) {
	orgID, err := slug("org_id", a.OrgID)
	if err != nil {
		return db.Organization{}, err
	}
	if a.Password == "" {
		return db.Organization{}, badInput("admin_password is required")
	}
	var org db.Organization
	err = s.store.View(ctx, func(q db.Queries) (err error) {
		org, err = q.GetOrganization(ctx, orgID)
		return err
	})
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		return db.Organization{}, err
	}
	ok, err := s.checkPassword(ctx, adminKey(orgID), org.AdminPasswordHash, a.Password, err == nil)
	if err != nil {
		return db.Organization{}, err
	}
	if !ok {
		return db.Organization{}, errBadAdmin
	}
	s.verified()
	return org, nil
}

// sameAdmin checks, inside the transaction that acts on an admin check, that
// the admin password hash is still the one verified.
func sameAdmin(ctx context.Context, q db.Queries, verified db.Organization) error {
	org, err := q.GetOrganization(ctx, verified.ID)
	if errors.Is(err, db.ErrNotFound) || (err == nil && org.AdminPasswordHash != verified.AdminPasswordHash) {
		return errBadAdmin
	}
	return err
}

// adminUpdate checks the admin password, then runs prepare (work that must
// not happen for a caller who fails the check, such as hashing), then fn on
// the named user in one transaction, and returns the user as fn left them.
func (s *Service) adminUpdate(ctx context.Context, a Admin, userIDArg string, prepare func() error,
	fn func(q db.Queries, u db.User, now time.Time) error) (db.User, error) {
	userID, err := slug("user_id", userIDArg)
	if err != nil {
		return db.User{}, err
	}
	ctx, release, err := s.passwordTurn(ctx) // held for the check and prepare's hash
	if err != nil {
		return db.User{}, err
	}
	defer release()
	org, err := s.adminCheck(ctx, a)
	if err != nil {
		return db.User{}, err
	}
	if prepare != nil {
		if err := prepare(); err != nil {
			return db.User{}, err
		}
	}
	var u db.User
	err = s.store.InTx(ctx, func(q db.Queries) error {
		if err := sameAdmin(ctx, q, org); err != nil {
			return err
		}
		if u, err = q.LockUser(ctx, org.ID, userID); err != nil {
			return err
		}
		if fn != nil {
			if err := fn(q, u, s.clock()); err != nil {
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
	u, err := s.adminUpdate(ctx, a, userID, nil, func(q db.Queries, u db.User, _ time.Time) error {
		return q.UpdateUserProfileNotes(ctx, u.OrgID, u.ID, notes)
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
	u, err := s.adminUpdate(ctx, a, userID, hashNew, func(q db.Queries, u db.User, now time.Time) error {
		if err := q.UpdateUserPassword(ctx, u.OrgID, u.ID, hash); err != nil {
			return err
		}
		var err error
		if revoked, err = q.RevokeUserTokens(ctx, u.OrgID, u.ID, nil, now); err != nil {
			return err
		}
		return q.ClearThrottle(ctx, userKey(u.OrgID, u.ID))
	})
	if err != nil {
		return PasswordResult{}, err
	}
	return PasswordResult{UserID: u.ID, Status: "password reset; every token of the user was revoked", TokensRevoked: revoked}, nil
}

// DeactivateUser stops a person from logging in or using any token.
func (s *Service) DeactivateUser(ctx context.Context, a Admin, userID string) (Profile, error) {
	u, err := s.adminUpdate(ctx, a, userID, nil, func(q db.Queries, u db.User, now time.Time) error {
		if u.DeactivatedAt != nil {
			return nil
		}
		if err := q.SetUserDeactivated(ctx, u.OrgID, u.ID, &now); err != nil {
			return err
		}
		_, err := q.RevokeUserTokens(ctx, u.OrgID, u.ID, nil, now)
		return err
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
	u, err := s.adminUpdate(ctx, a, userID, nil, func(q db.Queries, u db.User, now time.Time) error {
		if err := q.SetUserDeactivated(ctx, u.OrgID, u.ID, nil); err != nil {
			return err
		}
		// Attempts made while deactivated do not count against them.
		return q.ClearThrottle(ctx, userKey(u.OrgID, u.ID))
	})
	if err != nil {
		return Profile{}, err
	}
	res := profileOf(u)
	res.NextStep = "The user can log in again; their old tokens stay revoked."
	return res, nil
}
