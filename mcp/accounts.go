package mcp

import (
	"context"
	"errors"
	"time"

	"github.com/ctalk/ctalk/db"
)

type registerOrganizationArgs struct {
	OrgID         string `json:"org_id"`
	Name          string `json:"name"`
	AdminPassword string `json:"admin_password"`
}

type organizationResult struct {
	OrgID     string    `json:"org_id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	NextStep  string    `json:"next_step"`
}

func (t *tools) registerOrganization(ctx context.Context, a registerOrganizationArgs) (any, error) {
	orgID, err := slug("org_id", a.OrgID)
	if err != nil {
		return nil, err
	}
	name, err := text("name", a.Name, true, maxNameLen)
	if err != nil {
		return nil, err
	}
	if err := password("admin_password", a.AdminPassword, minAdminPassLen); err != nil {
		return nil, err
	}
	hash, err := t.hash.Hash(ctx, a.AdminPassword)
	if err != nil {
		return nil, err
	}
	org := db.Organization{ID: orgID, Name: name, AdminPasswordHash: hash, CreatedAt: t.clock()}
	err = t.store.InTx(ctx, func(q db.Queries) error { return q.CreateOrganization(ctx, org) })
	if errors.Is(err, db.ErrConflict) {
		return nil, badInput("organization %q already exists: choose another org_id, or register users in it with its admin password", orgID)
	} else if err != nil {
		return nil, err
	}
	return organizationResult{
		OrgID: orgID, Name: name, CreatedAt: org.CreatedAt,
		NextStep: "Keep the org_id and admin password safe: the admin password is needed to register users. Next: register_user.",
	}, nil
}

// adminCheck verifies an organization's admin password. Unknown organizations
// cost the same hash as a wrong password and give the same error.
func (t *tools) adminCheck(ctx context.Context, orgIDArg, adminPassword string) (db.Organization, error) {
	orgID, err := slug("org_id", orgIDArg)
	if err != nil {
		return db.Organization{}, err
	}
	if adminPassword == "" {
		return db.Organization{}, badInput("admin_password is required")
	}
	var org db.Organization
	err = t.store.View(ctx, func(q db.Queries) (err error) {
		org, err = q.GetOrganization(ctx, orgID)
		return err
	})
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		return db.Organization{}, err
	}
	ok, verr := t.checkPassword(ctx, adminKey(orgID), org.AdminPasswordHash, adminPassword, err == nil)
	if verr != nil {
		return db.Organization{}, verr
	}
	if !ok {
		return db.Organization{}, errBadAdmin
	}
	return org, nil
}

type registerUserArgs struct {
	OrgID         string `json:"org_id"`
	AdminPassword string `json:"admin_password"`
	UserID        string `json:"user_id"`
	Name          string `json:"name"`
	Password      string `json:"password"`
	Ownership     string `json:"ownership"`
	Notes         string `json:"notes"`
}

type userResult struct {
	OrgID        string     `json:"org_id"`
	UserID       string     `json:"user_id"`
	Name         string     `json:"name"`
	Ownership    string     `json:"ownership"`
	Notes        string     `json:"notes"`
	ProfileNotes string     `json:"profile_notes,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	Deactivated  bool       `json:"deactivated,omitempty"`
	NextStep     string     `json:"next_step,omitempty"`
	ExpiresAt    *time.Time `json:"token_expires_at,omitempty"`
}

func (t *tools) registerUser(ctx context.Context, a registerUserArgs) (any, error) {
	u := db.User{CreatedAt: t.clock()}
	var err error
	if u.ID, err = slug("user_id", a.UserID); err != nil {
		return nil, err
	}
	if u.Name, err = text("name", a.Name, true, maxNameLen); err != nil {
		return nil, err
	}
	if u.Ownership, err = text("ownership", a.Ownership, false, maxOwnershipLen); err != nil {
		return nil, err
	}
	if u.Notes, err = text("notes", a.Notes, false, maxNotesLen); err != nil {
		return nil, err
	}
	if err := password("password", a.Password, minUserPassLen); err != nil {
		return nil, err
	}
	org, err := t.adminCheck(ctx, a.OrgID, a.AdminPassword)
	if err != nil {
		return nil, err
	}
	u.OrgID = org.ID
	if u.PasswordHash, err = t.hash.Hash(ctx, a.Password); err != nil {
		return nil, err
	}
	err = t.store.InTx(ctx, func(q db.Queries) error { return q.CreateUser(ctx, u) })
	if errors.Is(err, db.ErrConflict) {
		return nil, badInput("user %q already exists in organization %q: choose another user_id", u.ID, u.OrgID)
	} else if err != nil {
		return nil, err
	}
	return userResult{
		OrgID: u.OrgID, UserID: u.ID, Name: u.Name, Ownership: u.Ownership, Notes: u.Notes, CreatedAt: u.CreatedAt,
		NextStep: "The user can now call login with org_id, user_id and password.",
	}, nil
}

type loginArgs struct {
	OrgID    string `json:"org_id"`
	UserID   string `json:"user_id"`
	Password string `json:"password"`
}

type loginResult struct {
	AuthToken string    `json:"auth_token"`
	ExpiresAt time.Time `json:"expires_at"`
	OrgID     string    `json:"org_id"`
	UserID    string    `json:"user_id"`
	Name      string    `json:"name"`
	Note      string    `json:"note"`
}

func (t *tools) login(ctx context.Context, a loginArgs) (any, error) {
	orgID, err1 := slug("org_id", a.OrgID)
	userID, err2 := slug("user_id", a.UserID)
	if err := errors.Join(err1, err2); err != nil {
		return nil, errBadLogin
	}
	if a.Password == "" || len(a.Password) > 4*maxPasswordLen {
		return nil, errBadLogin
	}
	var u db.User
	err := t.store.View(ctx, func(q db.Queries) (err error) {
		u, err = q.GetUser(ctx, orgID, userID)
		return err
	})
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		return nil, err
	}
	// Unknown organization or user: verify against a dummy hash anyway, so
	// every failure costs the same time and gives the same message.
	ok, verr := t.checkPassword(ctx, userKey(orgID, userID), u.PasswordHash, a.Password, err == nil && u.DeactivatedAt == nil)
	if verr != nil {
		return nil, verr
	}
	if !ok {
		return nil, errBadLogin
	}
	token, hash := newToken()
	now := t.clock()
	tok := db.Token{TokenHash: hash, OrgID: u.OrgID, UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(t.tokenTTL)}
	if err := t.store.InTx(ctx, func(q db.Queries) error { return q.CreateToken(ctx, tok) }); err != nil {
		return nil, err
	}
	return loginResult{
		AuthToken: token, ExpiresAt: tok.ExpiresAt, OrgID: u.OrgID, UserID: u.ID, Name: u.Name,
		Note: "Pass auth_token to later ctalk tool calls in this conversation. Treat it like a password: " +
			"never paste it into a question, answer or note.",
	}, nil
}

type authArgs struct {
	AuthToken string `json:"auth_token"`
}

type whoamiResult struct {
	userResult
	OrgName string `json:"org_name"`
}

func (t *tools) whoami(ctx context.Context, a authArgs) (any, error) {
	var res whoamiResult
	err := t.store.View(ctx, func(q db.Queries) error {
		c, err := t.authenticate(ctx, q, a.AuthToken)
		if err != nil {
			return err
		}
		org, err := q.GetOrganization(ctx, c.user.OrgID)
		if err != nil {
			return err
		}
		res = whoamiResult{userResult: profileOf(c.user), OrgName: org.Name}
		res.ExpiresAt = &c.token.ExpiresAt
		return nil
	})
	return res, err
}

func profileOf(u db.User) userResult {
	return userResult{
		OrgID: u.OrgID, UserID: u.ID, Name: u.Name, Ownership: u.Ownership, Notes: u.Notes,
		ProfileNotes: u.ProfileNotes, CreatedAt: u.CreatedAt, Deactivated: u.DeactivatedAt != nil,
	}
}

type updateProfileNotesArgs struct {
	OrgID         string `json:"org_id"`
	AdminPassword string `json:"admin_password"`
	UserID        string `json:"user_id"`
	ProfileNotes  string `json:"profile_notes"`
}

func (t *tools) updateUserProfileNotes(ctx context.Context, a updateProfileNotesArgs) (any, error) {
	userID, err := slug("user_id", a.UserID)
	if err != nil {
		return nil, err
	}
	notes, err := text("profile_notes", a.ProfileNotes, false, maxNotesLen)
	if err != nil {
		return nil, err
	}
	org, err := t.adminCheck(ctx, a.OrgID, a.AdminPassword)
	if err != nil {
		return nil, err
	}
	var u db.User
	err = t.store.InTx(ctx, func(q db.Queries) error {
		if err := q.UpdateUserProfileNotes(ctx, org.ID, userID, notes); err != nil {
			return err
		}
		u, err = q.GetUser(ctx, org.ID, userID)
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		return nil, badInput("no user %q in organization %q: list_users shows who is registered", userID, org.ID)
	} else if err != nil {
		return nil, err
	}
	return profileOf(u), nil
}
