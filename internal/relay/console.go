package relay

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/ctalk/ctalk/db"
)

// The admin console's rules. An organization admin is a person holding the
// admin role: the person who signed the organization up holds it, and any
// signed-in person gets it by entering the admin password once
// (BecomeAdmin) or from another admin (SetAdminRole). Every admin action
// then authorizes with Admin{Session: …}, so admin work never needs the
// admin password in a conversation; the MCP admin tools keep taking it.

// GeneratePassword returns a new random password (about 100 bits) for a
// person an admin registers or resets: the console shows it once.
func GeneratePassword() string {
	id := randomID(20)
	return id[:5] + "-" + id[5:10] + "-" + id[10:15] + "-" + id[15:]
}

// AdminPerson is a person as the admin console lists them.
type AdminPerson struct {
	Profile
	Admin bool
}

// ListOrgPeople lists everyone in the admin's organization, deactivated
// people and admins included, with their notes.
func (s *Service) ListOrgPeople(ctx context.Context, a Admin) ([]AdminPerson, error) {
	var out []AdminPerson
	err := s.store.View(ctx, func(q db.Queries) error {
		auth, err := s.viewAdmin(ctx, q, a)
		if err != nil {
			return err
		}
		users, err := q.ListUsers(ctx, auth.org.ID)
		if err != nil {
			return err
		}
		out = make([]AdminPerson, 0, len(users))
		for _, u := range users {
			out = append(out, AdminPerson{Profile: profileOf(u), Admin: u.AdminSince != nil})
		}
		return nil
	})
	return out, err
}

// BecomeAdmin gives the signed-in person the admin role of their
// organization, on the organization's admin password.
func (s *Service) BecomeAdmin(ctx context.Context, cred Credentials, adminPassword string) (AdminPerson, error) {
	var c caller
	err := s.store.View(ctx, func(q db.Queries) (err error) {
		c, err = s.authenticate(ctx, q, cred)
		return err
	})
	if err != nil {
		return AdminPerson{}, err
	}
	ctx, release, err := s.passwordTurn(ctx)
	if err != nil {
		return AdminPerson{}, err
	}
	defer release()
	auth, err := s.adminCheck(ctx, Admin{OrgID: c.user.OrgID, Password: adminPassword})
	if err != nil {
		return AdminPerson{}, err
	}
	var u db.User
	err = s.store.InTx(ctx, func(q db.Queries) error {
		if err := s.sameAdmin(ctx, q, auth); err != nil {
			return err
		}
		me, err := s.authenticate(ctx, q, cred)
		if err != nil {
			return err
		}
		if u = me.user; u.AdminSince != nil {
			return nil
		}
		now := s.clock()
		if err := q.SetUserAdmin(ctx, u.OrgID, u.ID, &now); err != nil {
			return err
		}
		u.AdminSince = &now
		return s.audit(ctx, q, u.OrgID, u.ID, AuditRoleGrant, u.ID, "with the admin password")
	})
	if err != nil {
		return AdminPerson{}, err
	}
	return AdminPerson{Profile: profileOf(u), Admin: true}, nil
}

// SetAdminRole gives a person the admin role, or takes it back.
func (s *Service) SetAdminRole(ctx context.Context, a Admin, userID string, admin bool) (AdminPerson, error) {
	u, err := s.adminUpdate(ctx, a, userID, nil, func(q db.Queries, u db.User, now time.Time, actor string) error {
		if (u.AdminSince != nil) == admin {
			return nil
		}
		action, since := AuditRoleRevoke, (*time.Time)(nil)
		if admin {
			if u.DeactivatedAt != nil {
				return errorf(KindConflict, "%s is deactivated: reactivate them first", u.ID)
			}
			action, since = AuditRoleGrant, &now
		}
		if err := q.SetUserAdmin(ctx, u.OrgID, u.ID, since); err != nil {
			return err
		}
		return s.audit(ctx, q, u.OrgID, actor, action, u.ID, "")
	})
	if err != nil {
		return AdminPerson{}, err
	}
	return AdminPerson{Profile: profileOf(u), Admin: u.AdminSince != nil}, nil
}

// ChangeAdminPassword replaces the organization's admin password. The
// admin must be signed in with the admin role and know the current one: a
// session alone cannot take the password from the organization.
func (s *Service) ChangeAdminPassword(ctx context.Context, a Admin, current, newPassword string) error {
	if a.Session == nil {
		return errNotAdmin
	}
	if err := password("new admin password", newPassword, MinAdminPassLen); err != nil {
		return err
	}
	var me adminAuth
	err := s.store.View(ctx, func(q db.Queries) (err error) {
		me, err = s.sessionAdmin(ctx, q, *a.Session)
		return err
	})
	if err != nil {
		return err
	}
	if newPassword == current {
		return badInput("the new admin password is the current one: choose another")
	}
	ctx, release, err := s.passwordTurn(ctx) // held for the check and the new hash
	if err != nil {
		return err
	}
	defer release()
	byPassword, err := s.adminCheck(ctx, Admin{OrgID: me.org.ID, Password: current})
	if err != nil {
		return err
	}
	hash, err := s.hash.Hash(ctx, newPassword)
	if err != nil {
		return err
	}
	return s.store.InTx(ctx, func(q db.Queries) error {
		if err := s.sameAdmin(ctx, q, byPassword); err != nil {
			return err
		}
		if err := s.sameAdmin(ctx, q, me); err != nil {
			return err
		}
		if err := q.UpdateAdminPassword(ctx, me.org.ID, hash); err != nil {
			return err
		}
		if err := q.ClearThrottle(ctx, adminKey(me.org.ID)); err != nil {
			return err
		}
		return s.audit(ctx, q, me.org.ID, me.actorID(), AuditAdminPassword, "", "")
	})
}

// OrgToken is one live token or connected client of someone in the
// organization, as the admin console lists it.
type OrgToken struct {
	MyToken
	UserID string
}

// OrgTokens is what the organization's people hold.
type OrgTokens struct {
	Tokens  []OrgToken // login tokens and web sessions, newest first
	Clients []OrgToken // OAuth connections, newest first
	More    bool       // more than the listed tokens are live
}

// ListOrgTokens lists the live login tokens, web sessions and OAuth
// connections of everyone in the admin's organization.
func (s *Service) ListOrgTokens(ctx context.Context, a Admin) (OrgTokens, error) {
	var out OrgTokens
	err := s.store.View(ctx, func(q db.Queries) error {
		auth, err := s.viewAdmin(ctx, q, a)
		if err != nil {
			return err
		}
		now := s.clock()
		toks, err := q.ListOrgTokens(ctx, auth.org.ID, now, maxListed+1)
		if err != nil {
			return err
		}
		if len(toks) > maxListed {
			toks, out.More = toks[:maxListed], true
		}
		mine := db.Token{TokenHash: auth.cred.tokenHashOrNil()}
		for _, t := range toks {
			out.Tokens = append(out.Tokens, OrgToken{UserID: t.UserID, MyToken: tokenListed(t, mine)})
		}
		grants, err := q.ListOrgGrants(ctx, auth.org.ID)
		if err != nil {
			return err
		}
		refreshes, err := q.ListOrgGrantRefreshes(ctx, auth.org.ID, now)
		if err != nil {
			return err
		}
		for i, m := range grantsListed(grants, refreshes, mine) {
			out.Clients = append(out.Clients, OrgToken{UserID: grants[i].UserID, MyToken: m})
		}
		return nil
	})
	if err != nil {
		return OrgTokens{}, err
	}
	return out, nil
}

// RevokeOrgToken revokes any live login token, web session (by public id)
// or OAuth connection (by grant id) of someone in the admin's organization.
// Ids of other organizations' tokens answer like missing ones.
func (s *Service) RevokeOrgToken(ctx context.Context, a Admin, idArg string) (OrgToken, error) {
	id := strings.ToLower(strings.TrimSpace(idArg))
	if id == "" || len(id) > MaxIDLen {
		return OrgToken{}, badInput("id is required: it is shown next to each token on the list")
	}
	errNone := &Error{Kind: KindNotFound, msg: "nobody in your organization has a live token or connected client with that id: " +
		"it may be revoked or expired already; reload the list to see the ids"}
	if a.Session == nil {
		return OrgToken{}, errNotAdmin
	}
	var out OrgToken
	err := s.store.InTx(ctx, func(q db.Queries) error {
		auth, err := s.sessionAdmin(ctx, q, *a.Session)
		if err != nil {
			return err
		}
		now := s.clock()
		if strings.HasPrefix(id, grantIDPrefix) {
			grants, err := q.ListOrgGrants(ctx, auth.org.ID)
			if err != nil {
				return err
			}
			for _, g := range grants {
				if g.ID != strings.TrimSpace(idArg) {
					continue
				}
				if _, err := q.RevokeOAuthGrant(ctx, g.OrgID, g.UserID, g.ID, now); err != nil {
					return err
				}
				out = OrgToken{UserID: g.UserID, MyToken: MyToken{ID: g.ID, Kind: TokenKindOAuth, ClientName: g.ClientName}}
				return s.audit(ctx, q, g.OrgID, auth.actorID(), AuditTokenRevoke, g.UserID, revokedDetail(TokenKindOAuth, g.ClientName))
			}
			return errNone
		}
		if len(id) != 2*tokenIDBytes {
			return errNone
		}
		toks, err := q.ListOrgTokens(ctx, auth.org.ID, now, 1<<30)
		if err != nil {
			return err
		}
		for _, t := range toks {
			if tokenPublicID(t.TokenHash) != id {
				continue
			}
			if err := q.RevokeToken(ctx, t.TokenHash, now); errors.Is(err, db.ErrNotFound) {
				return errNone
			} else if err != nil {
				return err
			}
			out = OrgToken{UserID: t.UserID, MyToken: MyToken{ID: id, Kind: tokenKind(t)}}
			return s.audit(ctx, q, t.OrgID, auth.actorID(), AuditTokenRevoke, t.UserID, revokedDetail(tokenKind(t), ""))
		}
		return errNone
	})
	return out, err
}
