package mcp

import (
	"context"
	"errors"
	"time"

	"github.com/ctalk/ctalk/db"
)

type logoutResult struct {
	Status string `json:"status"`
}

// logout revokes the caller's token at once: every replica looks tokens up
// in the database on every call, so the next call anywhere fails.
func (t *tools) logout(ctx context.Context, a authArgs) (any, error) {
	err := t.store.InTx(ctx, func(q db.Queries) error {
		c, err := t.authenticate(ctx, q, a.AuthToken)
		if err != nil {
			return err
		}
		return q.RevokeToken(ctx, c.token.TokenHash, t.clock())
	})
	if err != nil {
		return nil, err
	}
	return logoutResult{Status: "logged out: this token no longer works; call login to get a new one"}, nil
}

type changePasswordArgs struct {
	AuthToken   string `json:"auth_token"`
	OldPassword string `json:"old_password"`
	NewPassword string `json:"new_password"`
}

type passwordResult struct {
	UserID        string `json:"user_id"`
	Status        string `json:"status"`
	TokensRevoked int64  `json:"other_tokens_revoked"`
}

func (t *tools) changePassword(ctx context.Context, a changePasswordArgs) (any, error) {
	if err := password("new_password", a.NewPassword, minUserPassLen); err != nil {
		return nil, err
	}
	var c caller
	err := t.store.View(ctx, func(q db.Queries) (err error) {
		c, err = t.authenticate(ctx, q, a.AuthToken)
		return err
	})
	if err != nil {
		return nil, err
	}
	ok, err := t.checkPassword(ctx, userKey(c.user.OrgID, c.user.ID), c.user.PasswordHash, a.OldPassword, true)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, badInput("old_password is wrong: nothing was changed")
	}
	hash, err := t.hash.Hash(ctx, a.NewPassword)
	if err != nil {
		return nil, err
	}
	var revoked int64
	err = t.store.InTx(ctx, func(q db.Queries) error {
		if err := q.UpdateUserPassword(ctx, c.user.OrgID, c.user.ID, hash); err != nil {
			return err
		}
		revoked, err = q.RevokeUserTokens(ctx, c.user.OrgID, c.user.ID, c.token.TokenHash, t.clock())
		return err
	})
	if err != nil {
		return nil, err
	}
	return passwordResult{UserID: c.user.ID, Status: "password changed; your other tokens were revoked, this one still works", TokensRevoked: revoked}, nil
}

type adminUserArgs struct {
	OrgID         string `json:"org_id"`
	AdminPassword string `json:"admin_password"`
	UserID        string `json:"user_id"`
	NewPassword   string `json:"new_password"`
}

// adminUpdate checks the admin password, then runs prepare (work that must
// not happen for a caller who fails the check, such as hashing), then fn on
// the named user in one transaction.
func (t *tools) adminUpdate(ctx context.Context, a adminUserArgs, prepare func() error,
	fn func(q db.Queries, u db.User, now time.Time) error) (db.User, error) {
	userID, err := slug("user_id", a.UserID)
	if err != nil {
		return db.User{}, err
	}
	org, err := t.adminCheck(ctx, a.OrgID, a.AdminPassword)
	if err != nil {
		return db.User{}, err
	}
	if prepare != nil {
		if err := prepare(); err != nil {
			return db.User{}, err
		}
	}
	var u db.User
	err = t.store.InTx(ctx, func(q db.Queries) error {
		if u, err = q.GetUser(ctx, org.ID, userID); err != nil {
			return err
		}
		now := t.clock()
		if err := fn(q, u, now); err != nil {
			return err
		}
		u, err = q.GetUser(ctx, org.ID, userID)
		return err
	})
	if errors.Is(err, db.ErrNotFound) {
		return db.User{}, badInput("no user %q in organization %q: list_users shows who is registered", userID, org.ID)
	}
	return u, err
}

func (t *tools) resetUserPassword(ctx context.Context, a adminUserArgs) (any, error) {
	if err := password("new_password", a.NewPassword, minUserPassLen); err != nil {
		return nil, err
	}
	var hash string
	hashNew := func() (err error) {
		hash, err = t.hash.Hash(ctx, a.NewPassword)
		return err
	}
	var revoked int64
	u, err := t.adminUpdate(ctx, a, hashNew, func(q db.Queries, u db.User, now time.Time) error {
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
		return nil, err
	}
	return passwordResult{UserID: u.ID, Status: "password reset; every token of the user was revoked", TokensRevoked: revoked}, nil
}

func (t *tools) deactivateUser(ctx context.Context, a adminUserArgs) (any, error) {
	u, err := t.adminUpdate(ctx, a, nil, func(q db.Queries, u db.User, now time.Time) error {
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
		return nil, err
	}
	res := profileOf(u)
	res.NextStep = "The user can no longer log in or use any token; their questions and answers stay. reactivate_user undoes this."
	return res, nil
}

func (t *tools) reactivateUser(ctx context.Context, a adminUserArgs) (any, error) {
	u, err := t.adminUpdate(ctx, a, nil, func(q db.Queries, u db.User, now time.Time) error {
		if err := q.SetUserDeactivated(ctx, u.OrgID, u.ID, nil); err != nil {
			return err
		}
		// Attempts made while deactivated do not count against them.
		return q.ClearThrottle(ctx, userKey(u.OrgID, u.ID))
	})
	if err != nil {
		return nil, err
	}
	res := profileOf(u)
	res.NextStep = "The user can log in again; their old tokens stay revoked."
	return res, nil
}
