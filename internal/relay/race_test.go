package relay

import (
	"errors"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// once sets a hook that runs the next time a password check passes, and
// only then (the hook's own admin calls pass checks too).
func (f *fixture) once(hook func()) {
	f.s.afterVerify = func() {
		f.s.afterVerify = nil
		hook()
	}
}

// TestPasswordCheckRaces: a password verified against a hash that changes
// (reset, deactivation) before the act on it commits gets nothing: no token,
// no password change. The hook stages the change in that gap.
func TestPasswordCheckRaces(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "umar")
		ctx := t.Context()
		acme := Admin{OrgID: "acme", Password: testAdminPassword}
		const reset = "reset-by-admin-1"
		resetUmar := func() {
			if _, err := f.s.ResetUserPassword(ctx, acme, "umar", reset); err != nil {
				t.Fatalf("ResetUserPassword = %v", err)
			}
		}

		// Login: verified against the old hash, reset before the token is made.
		f.once(resetUmar)
		if res, err := f.s.Login(ctx, "acme", "umar", testUserPassword); !errors.Is(err, errBadLogin) || res.AuthToken != "" {
			t.Fatalf("login racing a reset: token issued %v, err %v; want no token and %v", res.AuthToken != "", err, errBadLogin)
		}
		if _, err := f.s.Login(ctx, "acme", "umar", testUserPassword); !errors.Is(err, errBadLogin) {
			t.Errorf("login with the old password after the reset = %v, want %v", err, errBadLogin)
		}
		res, err := f.s.Login(ctx, "acme", "umar", reset)
		if err != nil {
			t.Fatalf("login with the reset password = %v", err)
		}
		token := res.AuthToken

		// change_password: old password verified, reset again before the change.
		f.once(func() {
			if _, err := f.s.ResetUserPassword(ctx, acme, "umar", testUserPassword); err != nil {
				t.Fatalf("ResetUserPassword = %v", err)
			}
		})
		if _, err := f.s.ChangePassword(ctx, Credentials{Token: token}, reset, "changed-by-umar-1"); err == nil {
			t.Fatal("change_password racing a reset succeeded, want it refused")
		}
		if _, err := f.s.Login(ctx, "acme", "umar", "changed-by-umar-1"); !errors.Is(err, errBadLogin) {
			t.Errorf("login with the password of the refused change = %v, want %v", err, errBadLogin)
		}
		if _, err := f.s.Login(ctx, "acme", "umar", testUserPassword); err != nil {
			t.Errorf("login with the admin's password = %v, want success", err)
		}

		// Login: verified, then the account is deactivated before the token is made.
		f.once(func() {
			if _, err := f.s.DeactivateUser(ctx, acme, "umar"); err != nil {
				t.Fatalf("DeactivateUser = %v", err)
			}
		})
		if res, err := f.s.Login(ctx, "acme", "umar", testUserPassword); !errors.Is(err, errBadLogin) || res.AuthToken != "" {
			t.Errorf("login racing a deactivation: token issued %v, err %v; want no token and %v", res.AuthToken != "", err, errBadLogin)
		}
	})
}
