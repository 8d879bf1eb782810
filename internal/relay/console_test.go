package relay

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// webSession signs a person in to the web pages and returns the session's credentials.
func (f *fixture) webSession(orgID, userID, password string) Credentials {
	f.t.Helper()
	sess, err := f.s.SignInWeb(f.t.Context(), orgID, userID, password)
	if err != nil {
		f.t.Fatalf("SignInWeb(%s/%s) = %v", orgID, userID, err)
	}
	return Credentials{Bearer: sess.Token, Resource: WebResource}
}

// wantKind fails unless err is an *Error of kind.
func wantKind(t *testing.T, call string, err error, kind Kind) {
	t.Helper()
	var re *Error
	if !errors.As(err, &re) || re.Kind != kind {
		t.Fatalf("%s = %v; want an error of kind %d", call, err, kind)
	}
}

// TestAdminRole: a signed-in person without the role is refused every admin
// action and read, and nothing changes; the admin password makes them an
// admin once (a wrong one does not); as an admin they register, reset,
// deactivate, reactivate, edit notes and grant the role with their session
// alone; a revoked session or a role taken back stops them at once.
func TestAdminRole(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "umar", "john")
		ctx := t.Context()
		umar := f.webSession("acme", "umar", testUserPassword)
		asUmar := Admin{Session: &umar}

		// Not an admin: refused everywhere, nothing written.
		refusals := map[string]error{}
		_, refusals["RegisterUser"] = f.s.RegisterUser(ctx, asUmar, NewUser{UserID: "eve", Name: "Eve", Password: "eve-password-1"})
		_, refusals["DeactivateUser"] = f.s.DeactivateUser(ctx, asUmar, "john")
		_, refusals["ResetUserPassword"] = f.s.ResetUserPassword(ctx, asUmar, "john", "new-password-1")
		_, refusals["SetAdminRole"] = f.s.SetAdminRole(ctx, asUmar, "umar", true)
		_, refusals["ListOrgPeople"] = f.s.ListOrgPeople(ctx, asUmar)
		_, refusals["ListOrgTokens"] = f.s.ListOrgTokens(ctx, asUmar)
		_, refusals["ListAudit"] = f.s.ListAudit(ctx, asUmar, 0)
		_, refusals["RevokeOrgToken"] = f.s.RevokeOrgToken(ctx, asUmar, "0000000000000000")
		refusals["ChangeAdminPassword"] = f.s.ChangeAdminPassword(ctx, asUmar, testAdminPassword, "another-admin-password")
		for call, err := range refusals {
			wantKind(t, call, err, KindForbidden)
		}
		if _, err := f.s.Login(ctx, "acme", "eve", "eve-password-1"); err == nil {
			t.Fatal("a non-admin registered eve")
		}
		f.login("acme", "john") // john's password and account are as they were

		// A wrong admin password: refused, no role.
		_, err := f.s.BecomeAdmin(ctx, umar, "not-the-admin-password")
		wantKind(t, "BecomeAdmin(wrong password)", err, KindUnauthorized)
		_, err = f.s.ListOrgPeople(ctx, asUmar)
		wantKind(t, "ListOrgPeople after a wrong admin password", err, KindForbidden)

		// The admin password once: umar is an admin.
		me, err := f.s.BecomeAdmin(ctx, umar, testAdminPassword)
		if err != nil || !me.Admin || me.UserID != "umar" {
			t.Fatalf("BecomeAdmin = %+v, %v", me, err)
		}
		if me, _ := f.s.WebSessionUser(ctx, umar); me.UserID != "umar" {
			t.Fatalf("WebSessionUser after BecomeAdmin = %+v", me)
		}
		if _, err := f.s.RegisterUser(ctx, asUmar, NewUser{UserID: "eve", Name: "Eve", Password: "eve-password-1"}); err != nil {
			t.Fatalf("RegisterUser as admin = %v", err)
		}
		if _, err := f.s.Login(ctx, "acme", "eve", "eve-password-1"); err != nil {
			t.Fatalf("eve cannot log in after an admin registered her: %v", err)
		}
		johnTok := f.login("acme", "john")
		if _, err := f.s.UpdateUserProfileNotes(ctx, asUmar, "john", "owns billing"); err != nil {
			t.Fatal(err)
		}
		newPass := GeneratePassword()
		if len(newPass) < 20 || newPass == GeneratePassword() {
			t.Fatalf("GeneratePassword() = %q: want a fresh 20+ character password each time", newPass)
		}
		res, err := f.s.ResetUserPassword(ctx, asUmar, "john", newPass)
		if err != nil || res.TokensRevoked != 2 {
			t.Fatalf("ResetUserPassword as admin = %+v, %v; want john's two tokens revoked", res, err)
		}
		if _, err := f.s.Whoami(ctx, Credentials{Token: johnTok}); err == nil {
			t.Fatal("john's token works after an admin reset his password")
		}
		if _, err := f.s.Login(ctx, "acme", "john", newPass); err != nil {
			t.Fatalf("john cannot log in with the password the admin set: %v", err)
		}
		if _, err := f.s.DeactivateUser(ctx, asUmar, "eve"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.ReactivateUser(ctx, asUmar, "eve"); err != nil {
			t.Fatal(err)
		}
		people, err := f.s.ListOrgPeople(ctx, asUmar)
		if err != nil || len(people) != 3 {
			t.Fatalf("ListOrgPeople = %+v, %v", people, err)
		}
		for _, p := range people {
			if p.Admin != (p.UserID == "umar") {
				t.Errorf("ListOrgPeople: %s admin = %v", p.UserID, p.Admin)
			}
		}

		// Umar gives john the role; john's own session can act; then umar
		// takes it back and john is refused at once.
		if p, err := f.s.SetAdminRole(ctx, asUmar, "john", true); err != nil || !p.Admin {
			t.Fatalf("SetAdminRole(john, true) = %+v, %v", p, err)
		}
		john := f.webSession("acme", "john", newPass)
		if _, err := f.s.ListAudit(ctx, Admin{Session: &john}, 0); err != nil {
			t.Fatalf("ListAudit as the new admin john = %v", err)
		}
		if _, err := f.s.SetAdminRole(ctx, asUmar, "john", false); err != nil {
			t.Fatal(err)
		}
		_, err = f.s.ListAudit(ctx, Admin{Session: &john}, 0)
		wantKind(t, "ListAudit after the role was taken back", err, KindForbidden)

		// A signed-out admin session does nothing.
		if err := f.s.SignOutWeb(ctx, umar); err != nil {
			t.Fatal(err)
		}
		_, err = f.s.DeactivateUser(ctx, asUmar, "john")
		wantKind(t, "DeactivateUser with a signed-out session", err, KindUnauthorized)
		if _, err := f.s.Login(ctx, "acme", "john", newPass); err != nil {
			t.Fatalf("john was deactivated by a signed-out session: %v", err)
		}

		// A deactivated admin's session stops.
		boss := f.webSession("acme", "umar", testUserPassword)
		if _, err := f.s.DeactivateUser(ctx, Admin{OrgID: "acme", Password: testAdminPassword}, "umar"); err != nil {
			t.Fatal(err)
		}
		_, err = f.s.ListOrgPeople(ctx, Admin{Session: &boss})
		wantKind(t, "ListOrgPeople by a deactivated admin", err, KindUnauthorized)
	})
}

// TestAdminOtherOrganization: an admin of one organization cannot see or
// touch another's people or tokens; their ids answer exactly like missing ones.
func TestAdminOtherOrganization(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "umar")
		f.org("other")
		f.user("other", "john")
		f.user("other", "zed")
		ctx := t.Context()
		otherTok := f.login("other", "john")
		umar := f.webSession("acme", "umar", testUserPassword)
		if _, err := f.s.BecomeAdmin(ctx, umar, testAdminPassword); err != nil {
			t.Fatal(err)
		}
		asUmar := Admin{Session: &umar}

		_, errOther := f.s.DeactivateUser(ctx, asUmar, "john")
		_, errMissing := f.s.DeactivateUser(ctx, asUmar, "nobody")
		if errOther == nil || errMissing == nil ||
			strings.ReplaceAll(errOther.Error(), "john", "X") != strings.ReplaceAll(errMissing.Error(), "nobody", "X") {
			t.Errorf("DeactivateUser(another org's john) = %v; (missing) = %v: want the same answer", errOther, errMissing)
		}
		_, errOther = f.s.RevokeOrgToken(ctx, asUmar, tokenPublicID(hashToken(otherTok)))
		_, errMissing = f.s.RevokeOrgToken(ctx, asUmar, "0000000000000000")
		if errOther == nil || errMissing == nil || errOther.Error() != errMissing.Error() {
			t.Errorf("RevokeOrgToken(another org's token) = %v; (missing) = %v: want the same answer", errOther, errMissing)
		}
		if _, err := f.s.Whoami(ctx, Credentials{Token: otherTok}); err != nil {
			t.Errorf("another organization's token stopped working: %v", err)
		}
		toks, err := f.s.ListOrgTokens(ctx, asUmar)
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range append(toks.Tokens, toks.Clients...) {
			if tk.UserID != "umar" {
				t.Errorf("ListOrgTokens shows %+v of another organization", tk)
			}
		}
		people, _ := f.s.ListOrgPeople(ctx, asUmar)
		if len(people) != 1 || people[0].UserID != "umar" {
			t.Errorf("ListOrgPeople = %+v; want only acme's umar", people)
		}
		page, _ := f.s.ListAudit(ctx, asUmar, 0)
		for _, e := range page.Entries {
			if e.Actor == "john" || e.Target == "john" || e.Target == "zed" {
				t.Errorf("acme's audit log shows another organization's event %+v", e)
			}
		}
	})
}

// TestOrgTokens: an admin sees every live token, session and connected
// client of the organization with its owner, and revoking one makes that
// token's next call fail; the entry lands in the audit log.
func TestOrgTokens(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "umar", "john")
		ctx := t.Context()
		johnTok := f.login("acme", "john")
		umar := f.webSession("acme", "umar", testUserPassword)
		if _, err := f.s.BecomeAdmin(ctx, umar, testAdminPassword); err != nil {
			t.Fatal(err)
		}
		asUmar := Admin{Session: &umar}
		list, err := f.s.ListOrgTokens(ctx, asUmar)
		if err != nil || len(list.Tokens) != 2 {
			t.Fatalf("ListOrgTokens = %+v, %v; want john's login token and umar's session", list, err)
		}
		var johns OrgToken
		for _, tk := range list.Tokens {
			if tk.UserID == "john" {
				johns = tk
			} else if !tk.Current || tk.Kind != TokenKindWeb {
				t.Errorf("umar's own session listed as %+v", tk)
			}
		}
		if johns.ID != tokenPublicID(hashToken(johnTok)) || johns.Kind != TokenKindLogin {
			t.Fatalf("john's token listed as %+v", johns)
		}
		got, err := f.s.RevokeOrgToken(ctx, asUmar, johns.ID)
		if err != nil || got.UserID != "john" {
			t.Fatalf("RevokeOrgToken = %+v, %v", got, err)
		}
		if _, err := f.s.Whoami(ctx, Credentials{Token: johnTok}); err == nil {
			t.Fatal("john's token still works after an admin revoked it")
		}
		_, err = f.s.RevokeOrgToken(ctx, asUmar, johns.ID)
		wantKind(t, "RevokeOrgToken again", err, KindNotFound)
		page, err := f.s.ListAudit(ctx, asUmar, 0)
		if err != nil || len(page.Entries) == 0 {
			t.Fatalf("ListAudit = %+v, %v", page, err)
		}
		if e := page.Entries[0]; e.Action != AuditTokenRevoke || e.Actor != "umar" || e.Target != "john" || e.Detail != "login token" {
			t.Errorf("newest audit entry = %+v; want umar revoking john's login token", e)
		}
	})
}

// TestAuditLog: sign-ins, admin actions by password and by session, a
// sign-in lock, password changes and revocations are recorded with who,
// whom and the address, newest first; no entry holds a password or a
// token; pages go back through older entries.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "umar", "john")
		ctx := WithClientAddr(t.Context(), "203.0.113.7")
		tok, err := f.s.Login(ctx, "acme", "john", testUserPassword)
		if err != nil {
			t.Fatal(err)
		}
		john := Credentials{Token: tok.AuthToken}
		if _, err := f.s.ChangePassword(ctx, john, testUserPassword, "john-new-password"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.Logout(ctx, john); err != nil {
			t.Fatal(err)
		}
		for range accountFreeFailures { // the last one locks john's account
			if _, err := f.s.Login(ctx, "acme", "john", "wrong-password"); err == nil {
				t.Fatal("a wrong password logged in")
			}
		}
		sess, err := f.s.SignInWeb(ctx, "acme", "umar", testUserPassword)
		if err != nil {
			t.Fatal(err)
		}
		umar := Credentials{Bearer: sess.Token, Resource: WebResource}
		if _, err := f.s.BecomeAdmin(ctx, umar, testAdminPassword); err != nil {
			t.Fatal(err)
		}
		gen := GeneratePassword()
		if _, err := f.s.ResetUserPassword(ctx, Admin{Session: &umar}, "john", gen); err != nil {
			t.Fatal(err)
		}

		page, err := f.s.ListAudit(ctx, Admin{Session: &umar}, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range page.Entries {
			got = append(got, fmt.Sprintf("%s %s->%s %s", e.Action, e.Actor, e.Target, e.Detail))
			if e.Address != "203.0.113.7" && e.Actor != "" {
				t.Errorf("entry %+v: want the caller's address", e)
			}
			for _, secret := range []string{testUserPassword, testAdminPassword, "john-new-password", "wrong-password", gen, tok.AuthToken, sess.Token} {
				if strings.Contains(fmt.Sprintf("%+v", e), secret) {
					t.Errorf("audit entry %+v holds a secret", e)
				}
			}
		}
		want := []string{
			"user.password_reset umar->john 0 tokens revoked",
			"admin.role_grant umar->umar with the admin password",
			"signin umar->umar web",
			fmt.Sprintf("signin.locked ->john locked for 2s after %d failed attempts", accountFreeFailures),
			"user.password_change john->john 0 tokens revoked",
			"signin john->john login tool",
			"user.register ->john ",
			"user.register ->umar ",
		}
		// Logout's revocation comes between the password change and the lock.
		want = append(want[:4], append([]string{"token.revoke john->john login token"}, want[4:]...)...)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("audit log, newest first:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}

		// A refused act records nothing (the entry is written in the act's
		// transaction), and questions and answers never reach the log.
		_, err = f.s.RegisterUser(ctx, Admin{Session: &umar}, NewUser{UserID: "john", Name: "John again", Password: "another-password"})
		wantKind(t, "RegisterUser(an existing user)", err, KindConflict)
		asked, err := f.s.Ask(ctx, umar, "john", "What is the secret-question-text?")
		if err != nil {
			t.Fatal(err)
		}
		johnLogin, err := f.s.Login(ctx, "acme", "john", gen)
		if err != nil {
			t.Fatal(err)
		}
		johnNow := Credentials{Token: johnLogin.AuthToken}
		if _, err := f.s.Propose(ctx, johnNow, asked.MessageID, "the-secret-answer-text"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.s.Send(ctx, johnNow, asked.MessageID, "the-secret-answer-text", Approval{}); err != nil {
			t.Fatal(err)
		}
		after, err := f.s.ListAudit(ctx, Admin{Session: &umar}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range after.Entries {
			if e.Action == AuditRegister && e.Target == "john" && e.ID > page.Entries[0].ID {
				t.Errorf("a refused registration was recorded: %+v", e)
			}
			if s := fmt.Sprintf("%+v", e); strings.Contains(s, "secret-question-text") || strings.Contains(s, "secret-answer-text") {
				t.Errorf("audit entry %+v holds message text", e)
			}
		}
		want = append([]string{"signin john->john login tool"}, want...)

		// Paging: 250 more sign-ins; three pages, no entry twice, none missed.
		for range 250 {
			f.advance(time.Second)
			f.login("acme", "umar")
		}
		seen := map[int64]bool{}
		before := int64(0)
		pages := 0
		for {
			p, err := f.s.ListAudit(ctx, Admin{Session: &umar}, before)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, e := range p.Entries {
				if seen[e.ID] {
					t.Fatalf("entry %d on two pages", e.ID)
				}
				seen[e.ID] = true
			}
			if p.NextBefore == 0 {
				break
			}
			before = p.NextBefore
		}
		if pages != 3 || len(seen) != len(want)+250 {
			t.Errorf("paged through %d pages and %d entries; want 3 pages and %d", pages, len(seen), len(want)+250)
		}
	})
}

// TestChangeAdminPassword: an admin changes the organization's admin
// password knowing the current one; a wrong current one or a short new one
// changes nothing; the old one stops working for the MCP admin tools.
func TestChangeAdminPassword(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "umar")
		ctx := t.Context()
		umar := f.webSession("acme", "umar", testUserPassword)
		if _, err := f.s.BecomeAdmin(ctx, umar, testAdminPassword); err != nil {
			t.Fatal(err)
		}
		as := Admin{Session: &umar}
		wantKind(t, "ChangeAdminPassword(wrong current)", f.s.ChangeAdminPassword(ctx, as, "wrong-admin-password", "a-new-admin-password"), KindUnauthorized)
		wantKind(t, "ChangeAdminPassword(short new)", f.s.ChangeAdminPassword(ctx, as, testAdminPassword, "short"), KindBadInput)
		if _, err := f.s.RegisterUser(ctx, Admin{OrgID: "acme", Password: testAdminPassword}, NewUser{UserID: "john", Name: "John", Password: "john-password"}); err != nil {
			t.Fatalf("the admin password stopped working after refused changes: %v", err)
		}
		if err := f.s.ChangeAdminPassword(ctx, as, testAdminPassword, "a-new-admin-password"); err != nil {
			t.Fatal(err)
		}
		_, err := f.s.RegisterUser(ctx, Admin{OrgID: "acme", Password: testAdminPassword}, NewUser{UserID: "eve", Name: "Eve", Password: "eve-password"})
		wantKind(t, "RegisterUser with the old admin password", err, KindUnauthorized)
		if _, err := f.s.RegisterUser(ctx, Admin{OrgID: "acme", Password: "a-new-admin-password"}, NewUser{UserID: "eve", Name: "Eve", Password: "eve-password"}); err != nil {
			t.Fatalf("RegisterUser with the new admin password = %v", err)
		}
	})
}

// TestSignUpMakesAdmin: whoever signs an organization up on the web holds its admin role.
func TestSignUpMakesAdmin(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newFixture(t, s)
		ctx := t.Context()
		_, _, err := f.s.RegisterTeam(ctx, NewOrganization{OrgID: "newco", Name: "NewCo", AdminPassword: testAdminPassword},
			NewUser{UserID: "ann", Name: "Ann", Password: testUserPassword})
		if err != nil {
			t.Fatal(err)
		}
		ann := f.webSession("newco", "ann", testUserPassword)
		people, err := f.s.ListOrgPeople(ctx, Admin{Session: &ann})
		if err != nil || len(people) != 1 || !people[0].Admin {
			t.Fatalf("ListOrgPeople as the founder = %+v, %v; want ann, an admin", people, err)
		}
	})
}

// TestSessionAdminNotQueued: an admin acting by session with nothing to
// hash (deactivate, notes) takes no place in the password queue, so it goes
// through while a password check from the same address is in progress; a
// reset, which hashes, still waits its turn.
func TestSessionAdminNotQueued(t *testing.T) {
	t.Parallel()
	dbtest.ForEachBackend(t, func(t *testing.T, s db.Store) {
		f := newTeam(t, s, "umar", "john")
		ctx := WithClientAddr(t.Context(), "203.0.113.9")
		umar := f.webSession("acme", "umar", testUserPassword)
		if _, err := f.s.BecomeAdmin(ctx, umar, testAdminPassword); err != nil {
			t.Fatal(err)
		}
		as := Admin{Session: &umar}
		f.s.hash.wait = 20 * time.Millisecond
		_, release, err := f.s.passwordTurn(ctx) // a password check from the same address in progress
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		if _, err := f.s.DeactivateUser(ctx, as, "john"); err != nil {
			t.Errorf("DeactivateUser by session during a password check = %v", err)
		}
		if _, err := f.s.UpdateUserProfileNotes(ctx, as, "john", "on leave"); err != nil {
			t.Errorf("UpdateUserProfileNotes by session during a password check = %v", err)
		}
		_, err = f.s.ResetUserPassword(ctx, as, "john", GeneratePassword())
		wantKind(t, "ResetUserPassword during a password check", err, KindThrottled)
	})
}
