package relay

import (
	"context"
	"errors"
	"time"

	"github.com/ctalk/ctalk/db"
)

// NewOrganization is what registering an organization takes.
type NewOrganization struct {
	OrgID         string
	Name          string
	AdminPassword string
}

// OrganizationResult is a registered organization.
type OrganizationResult struct {
	OrgID     string    `json:"org_id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	NextStep  string    `json:"next_step"`
}

// RegisterOrganization creates an organization with its admin password.
func (s *Service) RegisterOrganization(ctx context.Context, a NewOrganization) (OrganizationResult, error) {
	orgID, err := slug("org_id", a.OrgID)
	if err != nil {
		return OrganizationResult{}, err
	}
	name, err := text("name", a.Name, true, MaxNameLen)
	if err != nil {
		return OrganizationResult{}, err
	}
	if err := password("admin_password", a.AdminPassword, MinAdminPassLen); err != nil {
		return OrganizationResult{}, err
	}
	// Counted before hashing: no account throttle covers a new organization.
	ctx, release, err := s.passwordTurn(ctx)
	if err != nil {
		return OrganizationResult{}, err
	}
	defer release()
	if err := s.registration(ctx); err != nil {
		return OrganizationResult{}, err
	}
	hash, err := s.hash.Hash(ctx, a.AdminPassword)
	if err != nil {
		return OrganizationResult{}, err
	}
	org := db.Organization{ID: orgID, Name: name, AdminPasswordHash: hash, CreatedAt: s.clock()}
	err = s.store.InTx(ctx, func(q db.Queries) error { return q.CreateOrganization(ctx, org) })
	if errors.Is(err, db.ErrConflict) {
		return OrganizationResult{}, errorf(KindConflict, "organization %q already exists: choose another org_id, or register users in it with its admin password", orgID)
	} else if err != nil {
		return OrganizationResult{}, err
	}
	return OrganizationResult{
		OrgID: orgID, Name: name, CreatedAt: org.CreatedAt,
		NextStep: "Keep the org_id and admin password safe: the admin password is needed to register users. Next: register_user.",
	}, nil
}

// NewUser is what registering a user takes.
type NewUser struct {
	UserID    string
	Name      string
	Password  string
	Ownership string
	Notes     string
}

// Profile is a person as results show them.
type Profile struct {
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

func profileOf(u db.User) Profile {
	return Profile{
		OrgID: u.OrgID, UserID: u.ID, Name: u.Name, Ownership: u.Ownership, Notes: u.Notes,
		ProfileNotes: u.ProfileNotes, CreatedAt: u.CreatedAt, Deactivated: u.DeactivatedAt != nil,
	}
}

// RegisterUser adds a person to an organization, with its admin password.
func (s *Service) RegisterUser(ctx context.Context, admin Admin, a NewUser) (Profile, error) {
	u := db.User{CreatedAt: s.clock()}
	var err error
	if u.ID, err = slug("user_id", a.UserID); err != nil {
		return Profile{}, err
	}
	if u.Name, err = text("name", a.Name, true, MaxNameLen); err != nil {
		return Profile{}, err
	}
	if u.Ownership, err = text("ownership", a.Ownership, false, MaxOwnershipLen); err != nil {
		return Profile{}, err
	}
	if u.Notes, err = text("notes", a.Notes, false, MaxNotesLen); err != nil {
		return Profile{}, err
	}
	if err := password("password", a.Password, MinUserPassLen); err != nil {
		return Profile{}, err
	}
	ctx, release, err := s.passwordTurn(ctx) // held for the check and the new hash
	if err != nil {
		return Profile{}, err
	}
	defer release()
	auth, err := s.adminCheck(ctx, admin)
	if err != nil {
		return Profile{}, err
	}
	org := auth.org
	u.OrgID = org.ID
	if u.PasswordHash, err = s.hash.Hash(ctx, a.Password); err != nil {
		return Profile{}, err
	}
	err = s.store.InTx(ctx, func(q db.Queries) error {
		if err := s.sameAdmin(ctx, q, auth); err != nil {
			return err
		}
		if err := q.CreateUser(ctx, u); err != nil {
			return err
		}
		return s.audit(ctx, q, u.OrgID, auth.actorID(), AuditRegister, u.ID, "")
	})
	if errors.Is(err, db.ErrConflict) {
		return Profile{}, errorf(KindConflict, "user %q already exists in organization %q: choose another user_id", u.ID, u.OrgID)
	} else if err != nil {
		return Profile{}, err
	}
	p := profileOf(u)
	p.NextStep = "The user can now call login with org_id, user_id and password."
	return p, nil
}

// LoginResult is a new token and whom it belongs to.
type LoginResult struct {
	AuthToken string    `json:"auth_token"`
	ExpiresAt time.Time `json:"expires_at"`
	OrgID     string    `json:"org_id"`
	UserID    string    `json:"user_id"`
	Name      string    `json:"name"`
	Note      string    `json:"note"`
}

// Login checks a user's password and creates a token. Every failure gives
// the same error and costs the same hash.
func (s *Service) Login(ctx context.Context, orgIDArg, userIDArg, pass string) (LoginResult, error) {
	u, err := s.verifyLogin(ctx, orgIDArg, userIDArg, pass)
	if err != nil {
		return LoginResult{}, err
	}
	token, hash := newToken()
	now := s.clock()
	tok := db.Token{TokenHash: hash, OrgID: u.OrgID, UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(s.tokenTTL)}
	err = s.store.InTx(ctx, func(q db.Queries) error {
		if err := stillVerified(ctx, q, u, errBadLogin); err != nil {
			return err
		}
		if err := q.CreateToken(ctx, tok); err != nil {
			return err
		}
		if _, err := q.PruneTokens(ctx, now.Add(-oauthKeep)); err != nil {
			return err
		}
		return s.audit(ctx, q, u.OrgID, u.ID, AuditSignIn, u.ID, "login tool")
	})
	if err != nil {
		return LoginResult{}, err
	}
	return LoginResult{
		AuthToken: token, ExpiresAt: tok.ExpiresAt, OrgID: u.OrgID, UserID: u.ID, Name: u.Name,
		Note: "Pass auth_token to later ctalk tool calls in this conversation. Treat it like a password: " +
			"never paste it into a question, answer or note.",
	}, nil
}

// verifyLogin checks a person's organization, user id and password under
// the throttle, for login and for the OAuth sign-in page alike: every
// failure costs the same time and gives the same message.
func (s *Service) verifyLogin(ctx context.Context, orgIDArg, userIDArg, pass string) (db.User, error) {
	orgID, err1 := slug("org_id", orgIDArg)
	userID, err2 := slug("user_id", userIDArg)
	if err := errors.Join(err1, err2); err != nil {
		return db.User{}, errBadLogin
	}
	if pass == "" || len(pass) > 4*MaxPasswordLen {
		return db.User{}, errBadLogin
	}
	var u db.User
	err := s.store.View(ctx, func(q db.Queries) (err error) {
		u, err = q.GetUser(ctx, orgID, userID)
		return err
	})
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		return db.User{}, err
	}
	// Unknown organization or user: verify against a dummy hash anyway, so
	// every failure costs the same time and gives the same message.
	ok, err := s.checkPassword(ctx, userKey(orgID, userID), u.PasswordHash, pass, err == nil && u.DeactivatedAt == nil)
	if err != nil {
		return db.User{}, err
	}
	if !ok {
		return db.User{}, errBadLogin
	}
	s.verified()
	return u, nil
}

// stillVerified locks the user's row and checks that the password hash and
// the account state are still the ones a password was verified against: a
// reset, change or deactivation that committed meanwhile wins, and one that
// commits later sees (and revokes) what this transaction writes.
func stillVerified(ctx context.Context, q db.Queries, verified db.User, refusal error) error {
	u, err := q.LockUser(ctx, verified.OrgID, verified.ID)
	if errors.Is(err, db.ErrNotFound) {
		return refusal
	} else if err != nil {
		return err
	}
	if u.PasswordHash != verified.PasswordHash || u.DeactivatedAt != nil {
		return refusal
	}
	return nil
}

// Whoami is the caller's profile, organization and token expiry.
type Whoami struct {
	Profile
	OrgName string `json:"org_name"`
}

// Whoami shows who the credentials belong to.
func (s *Service) Whoami(ctx context.Context, cred Credentials) (Whoami, error) {
	var res Whoami
	err := s.store.View(ctx, func(q db.Queries) error {
		c, err := s.authenticate(ctx, q, cred)
		if err != nil {
			return err
		}
		org, err := q.GetOrganization(ctx, c.user.OrgID)
		if err != nil {
			return err
		}
		res = Whoami{Profile: profileOf(c.user), OrgName: org.Name}
		res.ExpiresAt = &c.token.ExpiresAt
		return nil
	})
	return res, err
}

// LogoutResult confirms a revoked token.
type LogoutResult struct {
	Status string `json:"status"`
}

// Logout revokes the caller's token at once: every replica looks tokens up
// in the database on every call, so the next call anywhere fails.
func (s *Service) Logout(ctx context.Context, cred Credentials) (LogoutResult, error) {
	err := s.store.InTx(ctx, func(q db.Queries) error {
		c, err := s.authenticate(ctx, q, cred)
		if err != nil {
			return err
		}
		if c.token.GrantID != nil { // an OAuth client signs out: its refresh tokens go too
			if _, err = q.RevokeOAuthGrant(ctx, c.user.OrgID, c.user.ID, *c.token.GrantID, s.clock()); err != nil {
				return err
			}
			return s.auditRevoke(ctx, q, c, TokenKindOAuth, *c.token.GrantID)
		}
		if err := q.RevokeToken(ctx, c.token.TokenHash, s.clock()); err != nil {
			return err
		}
		return s.auditRevoke(ctx, q, c, tokenKind(c.token), "")
	})
	if err != nil {
		return LogoutResult{}, err
	}
	return LogoutResult{Status: "logged out: this token no longer works; call login to get a new one"}, nil
}

// PasswordResult reports a changed password and the tokens it revoked.
type PasswordResult struct {
	UserID        string `json:"user_id"`
	Status        string `json:"status"`
	TokensRevoked int64  `json:"other_tokens_revoked"`
}

// ChangePassword replaces the caller's password after checking the old one,
// and revokes every other token of theirs.
func (s *Service) ChangePassword(ctx context.Context, cred Credentials, oldPassword, newPassword string) (PasswordResult, error) {
	if err := password("new_password", newPassword, MinUserPassLen); err != nil {
		return PasswordResult{}, err
	}
	var c caller
	err := s.store.View(ctx, func(q db.Queries) (err error) {
		c, err = s.authenticate(ctx, q, cred)
		return err
	})
	if err != nil {
		return PasswordResult{}, err
	}
	errWrongOld := errorf(KindUnauthorized, "old_password is wrong: nothing was changed")
	ctx, release, err := s.passwordTurn(ctx) // held for the check and the new hash
	if err != nil {
		return PasswordResult{}, err
	}
	defer release()
	ok, err := s.checkPassword(ctx, userKey(c.user.OrgID, c.user.ID), c.user.PasswordHash, oldPassword, true)
	if err != nil {
		return PasswordResult{}, err
	}
	if !ok {
		return PasswordResult{}, errWrongOld
	}
	hash, err := s.hash.Hash(ctx, newPassword)
	if err != nil {
		return PasswordResult{}, err
	}
	s.verified()
	var revoked int64
	err = s.store.InTx(ctx, func(q db.Queries) error {
		if err := stillVerified(ctx, q, c.user, errWrongOld); err != nil {
			return err
		}
		if _, err := s.authenticate(ctx, q, cred); err != nil {
			return err
		}
		if err := q.UpdateUserPassword(ctx, c.user.OrgID, c.user.ID, hash); err != nil {
			return err
		}
		if revoked, err = q.RevokeUserTokens(ctx, c.user.OrgID, c.user.ID, c.token.TokenHash, s.clock()); err != nil {
			return err
		}
		return s.audit(ctx, q, c.user.OrgID, c.user.ID, AuditPasswordChange, c.user.ID, revokedCount(revoked))
	})
	if err != nil {
		return PasswordResult{}, err
	}
	return PasswordResult{UserID: c.user.ID, Status: "password changed; your other tokens were revoked, this one still works", TokensRevoked: revoked}, nil
}
