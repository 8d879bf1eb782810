package mcp

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLoginFailuresLookAlike: whatever was wrong, a failed login says the same
// thing, so nobody can find out which organizations and users exist.
func TestLoginFailuresLookAlike(t *testing.T) {
	t.Parallel()
	forEachHarness(t, Options{}, func(t *testing.T, h *harness) {
		h.org("acme")
		h.user("acme", "umar")
		h.user("acme", "gone")
		h.ok("deactivate_user", map[string]any{"org_id": "acme", "admin_password": testAdminPassword, "user_id": "gone"}, nil)

		for _, tt := range []struct {
			name string
			args map[string]any
		}{
			{"unknown organization", map[string]any{"org_id": "nope", "user_id": "umar", "password": testUserPassword}},
			{"unknown user", map[string]any{"org_id": "acme", "user_id": "nobody", "password": testUserPassword}},
			{"wrong password", map[string]any{"org_id": "acme", "user_id": "umar", "password": "wrong-" + testUserPassword}},
			{"deactivated user", map[string]any{"org_id": "acme", "user_id": "gone", "password": testUserPassword}},
			{"malformed org_id", map[string]any{"org_id": "-acme-", "user_id": "umar", "password": testUserPassword}},
			{"empty password", map[string]any{"org_id": "acme", "user_id": "umar", "password": ""}},
		} {
			if got := h.fail("login", tt.args); got != badLoginText {
				t.Errorf("login with %s = %q, want %q", tt.name, got, badLoginText)
			}
		}
		h.login("acme", "umar") // the failures did not lock the account out
	})
}

// TestRegisterOrganizationDuplicate: a taken org_id is refused, and the
// existing organization keeps its name and admin password.
func TestRegisterOrganizationDuplicate(t *testing.T) {
	t.Parallel()
	forEachHarness(t, Options{}, func(t *testing.T, h *harness) {
		h.org("acme")
		const impostorPassword = "impostor-admin-password"
		got := h.fail("register_organization", map[string]any{
			"org_id": "ACME", "name": "Impostor Inc", "admin_password": impostorPassword,
		})
		if want := `organization "acme" already exists`; !strings.Contains(got, want) {
			t.Errorf("register_organization(ACME) again = %q, want it to contain %q", got, want)
		}
		if strings.Contains(got, impostorPassword) {
			t.Errorf("register_organization error %q repeats the admin password", got)
		}

		h.wantFail("register_user", map[string]any{
			"org_id": "acme", "admin_password": impostorPassword, "user_id": "eve",
			"name": "Eve", "password": testUserPassword, "ownership": "",
		}, badAdminText)
		h.user("acme", "umar") // the original admin password still works
		var me struct {
			OrgName string `json:"org_name"`
		}
		h.ok("whoami", map[string]any{"auth_token": h.login("acme", "umar")}, &me)
		if me.OrgName != "Org acme" {
			t.Errorf("org_name after a refused duplicate = %q, want %q", me.OrgName, "Org acme")
		}
	})
}

// TestRegisterUserWrongAdminPassword: without the right admin password nothing
// is stored, and an unknown organization answers the same way.
func TestRegisterUserWrongAdminPassword(t *testing.T) {
	t.Parallel()
	forEachHarness(t, Options{}, func(t *testing.T, h *harness) {
		h.org("acme")
		const otherAdmin = "other-orgs-admin-password"
		h.ok("register_organization", map[string]any{"org_id": "other", "name": "Other", "admin_password": otherAdmin}, nil)

		args := func(org, admin string) map[string]any {
			return map[string]any{
				"org_id": org, "admin_password": admin, "user_id": "umar", "name": "Umar",
				"password": testUserPassword, "ownership": "platform tooling", "notes": "hi",
			}
		}
		for _, tt := range []struct {
			name        string
			org, admin  string
			wantMessage string
		}{
			{"wrong admin password", "acme", "not-the-admin-password", badAdminText},
			{"another organization's admin password", "acme", otherAdmin, badAdminText},
			{"unknown organization", "nope", testAdminPassword, badAdminText},
			{"empty admin password", "acme", "", "admin_password is required"},
		} {
			if got := h.fail("register_user", args(tt.org, tt.admin)); got != tt.wantMessage {
				t.Errorf("register_user with %s = %q, want %q", tt.name, got, tt.wantMessage)
			}
		}

		h.wantFail("login", map[string]any{"org_id": "acme", "user_id": "umar", "password": testUserPassword}, badLoginText)
		// No half-made user: the same user_id registers cleanly with the right password.
		h.ok("register_user", args("acme", testAdminPassword), nil)
		var list struct {
			Users []struct {
				UserID string `json:"user_id"`
			} `json:"users"`
		}
		h.ok("list_users", map[string]any{"auth_token": h.login("acme", "umar")}, &list)
		if len(list.Users) != 1 || list.Users[0].UserID != "umar" {
			t.Errorf("list_users = %+v, want only umar", list.Users)
		}
	})
}

// TestExpiredToken: a token stops working at its expiry, on every tool, with a
// message that tells the model to log in again.
func TestExpiredToken(t *testing.T) {
	t.Parallel()
	forEachTeam(t, Options{TokenTTL: time.Hour}, func(t *testing.T, h *harness, umar, _ string) {

		h.clock.Advance(time.Hour - time.Second)
		h.ok("whoami", map[string]any{"auth_token": umar}, nil)

		h.clock.Advance(time.Second)
		if !strings.Contains(badTokenText, "call login again") {
			t.Errorf("the bad-token error = %q, want it to say: call login again", badTokenText)
		}
		for name, args := range map[string]map[string]any{
			"whoami":           {},
			"list_users":       {},
			"get_user_profile": {"user_id": "john"},
			"update_my_notes":  {"notes": "new notes"},
			"ask_person":       {"to_user_id": "john", "question": "Still there?"},
			"check_inbox":      {},
			"propose_response": {"message_id": 1, "draft_text": "draft"},
			"send_response":    {"message_id": 1, "final_text": "final"},
			"check_replies":    {},
		} {
			args["auth_token"] = umar
			h.wantFail(name, args, badTokenText)
		}

		var me struct {
			UserID string `json:"user_id"`
		}
		h.ok("whoami", map[string]any{"auth_token": h.login("acme", "umar")}, &me)
		if diff := cmp.Diff("umar", me.UserID); diff != "" {
			t.Errorf("whoami after logging in again mismatch (-want +got):\n%s", diff)
		}
		// Nothing was stored by the refused calls.
		var inbox struct {
			Questions []any `json:"questions"`
		}
		h.ok("check_inbox", map[string]any{"auth_token": h.login("acme", "john")}, &inbox)
		if len(inbox.Questions) != 0 {
			t.Errorf("john's inbox after umar's expired ask_person = %v, want empty", inbox.Questions)
		}
	})
}
