package server_test

// The admin console end to end (issue 13): a person without the admin role
// gets the become-admin page and is refused on every admin post; the admin
// password grants the role once; an admin registers a person (the password
// shown once signs in), resets a password and deactivates (both end the
// person's session at the next request), revokes someone's MCP login token
// (its next MCP call fails), and reads the audit log, which names who did
// what from where and holds no password or token. Foreign user ids answer
// like missing ones; forms without the session's CSRF token are refused;
// names render escaped.

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

var shownPassword = regexp.MustCompile(`<code class="secret" id="new-password">([^<]+)</code>`)

// shownOnce is the password a register or reset page shows.
func shownOnce(t *testing.T, p webPage) string {
	t.Helper()
	m := shownPassword.FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil {
		t.Fatalf("the page shows no new password (status %d)\n%s", p.status, p.body)
	}
	if cc := p.resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("the page with the password has Cache-Control %q, want no-store", cc)
	}
	return m[1]
}

// sessionOf is the browser's session cookie.
func sessionOf(t *testing.T, b *browser) string {
	t.Helper()
	u, _ := url.Parse(b.base)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == "ctalk_session" {
			return c.Value
		}
	}
	t.Fatal("the browser holds no session cookie")
	return ""
}

const becomeForm = `action="/app/admin/become"`

func TestWebAdmin(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		base, logs := webServer(t, dbtest.Open(t, cfg), "")
		cs := connectTo(t, base+"/mcp", "", "")
		umarTok, johnTok := team(t, cs, "acme")
		registerOrg(t, cs, "beta", "Beta")
		registerUser(t, cs, "beta", "eve", "Eve", "")
		eveTok := login(t, cs, "beta", "eve")

		admin, john := newBrowser(base), newBrowser(base)
		admin.signIn(t, "acme", "umar", userPassword)
		john.signIn(t, "acme", "john", userPassword)

		// Nobody registered through MCP holds the role: the become-admin page.
		jp := john.get(t, "/app/admin")
		if jp.status != http.StatusOK || !strings.Contains(jp.body, becomeForm) || strings.Contains(jp.body, `href="/app/admin/tokens"`) {
			t.Fatalf("GET /app/admin as a non-admin = %d; want the become-admin form\n%s", jp.status, jp.body)
		}
		if p := john.get(t, "/app"); strings.Contains(p.body, `href="/app/admin"`) {
			t.Errorf("a non-admin's nav links to Admin")
		}
		for _, path := range []string{"/app/admin/tokens", "/app/admin/audit", "/app/admin/people/umar", "/app/admin/password"} {
			if p := john.get(t, path); p.status != http.StatusForbidden || !strings.Contains(p.body, becomeForm) {
				t.Errorf("GET %s as a non-admin = %d; want 403 with the become-admin form", path, p.status)
			}
		}
		jc := csrf(t, jp)
		for _, post := range []struct {
			path string
			form url.Values
		}{
			{"/app/admin", url.Values{"user_id": {"mallory"}, "name": {"Mallory"}}},
			{"/app/admin/people/umar", url.Values{"action": {"deactivate"}}},
			{"/app/admin/people/umar", url.Values{"action": {"reset"}}},
			{"/app/admin/people/umar", url.Values{"action": {"notes"}, "profile_notes": {"forged"}}},
			{"/app/admin/people/john", url.Values{"action": {"grant"}}},
			{"/app/admin/tokens", url.Values{"id": {tokenID(umarTok)}}},
			{"/app/admin/password", url.Values{"current_password": {"x"}, "new_password": {"a-forged-admin-password"}, "repeat_password": {"a-forged-admin-password"}}},
		} {
			post.form.Set("csrf_token", jc)
			if p := john.post(t, post.path, post.form); p.status != http.StatusForbidden || !strings.Contains(p.body, "you are not an admin") {
				t.Errorf("POST %s %v as a non-admin = %d; want 403 saying so\n%s", post.path, post.form.Get("action"), p.status, p.body)
			}
		}
		checkTokens(t, cs, true, umarTok, johnTok)
		callOK[userOut](t, cs, "register_user", args{"org_id": "acme", "admin_password": adminPassword, "user_id": "probe",
			"name": "Probe", "password": userPassword}) // the admin password is unchanged
		if p := admin.get(t, "/app"); p.status != http.StatusOK {
			t.Errorf("umar after john's refused posts: GET /app = %d, want 200", p.status)
		}

		// A wrong admin password is refused on the form; the session stays.
		p := john.post(t, "/app/admin/become", url.Values{"csrf_token": {jc}, "admin_password": {"not-the-admin-password"}})
		if p.status != http.StatusForbidden || !strings.Contains(p.body, "admin password is wrong") || !strings.Contains(p.body, becomeForm) {
			t.Errorf("become admin with a wrong password = %d\n%s", p.status, p.body)
		}
		if p := john.get(t, "/app/admin"); p.status != http.StatusOK || !strings.Contains(p.body, becomeForm) {
			t.Errorf("after a wrong admin password john's /app/admin = %d; want still the become-admin page", p.status)
		}

		// The admin password, once, makes umar an admin.
		ap := admin.get(t, "/app/admin")
		ac := csrf(t, ap)
		p = admin.post(t, "/app/admin/become", url.Values{"csrf_token": {ac}, "admin_password": {adminPassword}})
		if p.status != http.StatusSeeOther || p.location != "/app/admin?ok=admin" {
			t.Fatalf("become admin = %d to %q\n%s", p.status, p.location, p.body)
		}
		ap = admin.get(t, "/app/admin")
		if ap.status != http.StatusOK || strings.Contains(ap.body, becomeForm) || !strings.Contains(ap.body, `href="/app/admin/people/john"`) ||
			!strings.Contains(ap.body, `aria-current="page">Admin</a>`) {
			t.Fatalf("GET /app/admin as an admin = %d; want the people and the Admin nav link\n%s", ap.status, ap.body)
		}
		if strings.Contains(ap.body, "mallory") || strings.Contains(ap.body, "deactivated</span>") ||
			strings.Count(ap.body, `<span class="badge">admin</span>`) != 1 {
			t.Errorf("john's refused posts changed something: want no mallory, nobody deactivated, umar the one admin\n%s", ap.body)
		}
		if p := admin.get(t, "/app/people/umar"); strings.Contains(p.body, "forged") {
			t.Errorf("john's refused post changed umar's profile notes")
		}

		// CSRF: none, or another session's, changes nothing.
		for name, token := range map[string]string{"no csrf_token": "", "john's csrf_token": jc} {
			for _, post := range []struct {
				path string
				form url.Values
			}{
				{"/app/admin", url.Values{"user_id": {"forged"}, "name": {"Forged"}}},
				{"/app/admin/people/john", url.Values{"action": {"deactivate"}}},
				{"/app/admin/tokens", url.Values{"id": {tokenID(johnTok)}}},
				{"/app/admin/password", url.Values{"current_password": {adminPassword}, "new_password": {"a-forged-admin-password"}, "repeat_password": {"a-forged-admin-password"}}},
			} {
				if token != "" {
					post.form.Set("csrf_token", token)
				}
				if p := admin.post(t, post.path, post.form); p.status != http.StatusForbidden {
					t.Errorf("%s: POST %s = %d, want 403", name, post.path, p.status)
				}
			}
		}
		checkTokens(t, cs, true, johnTok)
		if p := admin.get(t, "/app/admin"); strings.Contains(p.body, "forged") {
			t.Errorf("a forged register post registered someone")
		}
		if p := john.get(t, "/app"); p.status != http.StatusOK {
			t.Errorf("john after forged deactivations: GET /app = %d, want 200", p.status)
		}

		// Register: the password is shown once, and signs in.
		const hostile = `<script>alert(1)</script> Nina`
		p = admin.post(t, "/app/admin", url.Values{"csrf_token": {ac}, "user_id": {"nina"}, "name": {hostile}, "ownership": {"billing"}})
		first := shownOnce(t, p)
		if strings.Contains(p.body, "<script>alert") || !strings.Contains(p.body, "&lt;script&gt;alert(1)&lt;/script&gt; Nina") ||
			!strings.Contains(p.body, "<code>acme</code>") || !strings.Contains(p.body, "/app/signin") || !strings.Contains(p.body, "ctalk login") {
			t.Errorf("the register page: want the escaped name, the org id, where to sign in\n%s", p.body)
		}
		if p := admin.get(t, "/app/admin"); strings.Contains(p.body, first) || strings.Contains(p.body, "<script>alert") ||
			!strings.Contains(p.body, "&lt;script&gt;alert(1)&lt;/script&gt; Nina") {
			t.Errorf("the people list shows the password or an unescaped name\n%s", p.body)
		}
		nina := newBrowser(base)
		nina.signIn(t, "acme", "nina", first)
		if p := admin.post(t, "/app/admin", url.Values{"csrf_token": {ac}, "user_id": {"nina"}, "name": {"Again"}}); p.status != http.StatusConflict ||
			!strings.Contains(p.body, `role="alert"`) || shownPassword.MatchString(p.body) {
			t.Errorf("registering nina again = %d; want 409 with an alert and no password", p.status)
		}

		// Reset: nina's session ends at her next request; the new password works.
		person := admin.get(t, "/app/admin/people/nina")
		if person.status != http.StatusOK || strings.Contains(person.body, "<script>alert") {
			t.Fatalf("nina's admin page = %d\n%s", person.status, person.body)
		}
		second := shownOnce(t, admin.post(t, "/app/admin/people/nina", url.Values{"csrf_token": {ac}, "action": {"reset"}}))
		if second == first {
			t.Fatalf("reset showed the old password")
		}
		nina.signedOut(t, "after the admin reset her password")
		adminSession := sessionOf(t, admin)
		nina.signIn(t, "acme", "nina", second)

		// Deactivate stops her session at the next request; reactivate lets her in.
		p = admin.post(t, "/app/admin/people/nina", url.Values{"csrf_token": {ac}, "action": {"deactivate"}})
		if p.status != http.StatusSeeOther || p.location != "/app/admin/people/nina?ok=deactivated" {
			t.Fatalf("deactivate = %d to %q\n%s", p.status, p.location, p.body)
		}
		nina.signedOut(t, "after the admin deactivated her")
		form := nina.get(t, "/app/signin")
		if p := nina.post(t, "/app/signin", url.Values{"csrf_token": {csrf(t, form)}, "org_id": {"acme"}, "user_id": {"nina"}, "password": {second}}); p.status == http.StatusSeeOther {
			t.Errorf("a deactivated person signed in")
		}
		if p := admin.get(t, "/app/admin"); !strings.Contains(p.body, `<span class="badge">deactivated</span>`) {
			t.Errorf("the people list does not mark nina deactivated")
		}
		p = admin.post(t, "/app/admin/people/nina", url.Values{"csrf_token": {ac}, "action": {"reactivate"}})
		if p.status != http.StatusSeeOther {
			t.Fatalf("reactivate = %d\n%s", p.status, p.body)
		}
		nina.signIn(t, "acme", "nina", second)

		// Profile notes; the admin role given to john and taken back.
		if p := admin.post(t, "/app/admin/people/nina", url.Values{"csrf_token": {ac}, "action": {"notes"}, "profile_notes": {"<b>on call</b>"}}); p.status != http.StatusSeeOther {
			t.Errorf("save profile notes = %d\n%s", p.status, p.body)
		}
		if p := john.get(t, "/app/people/nina"); !strings.Contains(p.body, "&lt;b&gt;on call&lt;/b&gt;") {
			t.Errorf("john does not see nina's profile notes, escaped\n%s", p.body)
		}
		if p := admin.post(t, "/app/admin/people/john", url.Values{"csrf_token": {ac}, "action": {"grant"}}); p.status != http.StatusSeeOther {
			t.Errorf("grant john the admin role = %d\n%s", p.status, p.body)
		}
		if p := john.get(t, "/app/admin/audit"); p.status != http.StatusOK {
			t.Errorf("john with the role: GET /app/admin/audit = %d, want 200", p.status)
		}
		if p := admin.post(t, "/app/admin/people/john", url.Values{"csrf_token": {ac}, "action": {"ungrant"}}); p.status != http.StatusSeeOther {
			t.Errorf("take john's admin role = %d\n%s", p.status, p.body)
		}
		if p := john.get(t, "/app/admin/audit"); p.status != http.StatusForbidden {
			t.Errorf("john without the role: GET /app/admin/audit = %d, want 403", p.status)
		}

		// Tokens: john's MCP login token is listed and revoked; its next
		// MCP call fails. Beta's token is neither listed nor revocable.
		tp := admin.get(t, "/app/admin/tokens")
		if tp.status != http.StatusOK || !strings.Contains(tp.body, tokenID(johnTok)) || strings.Contains(tp.body, tokenID(eveTok)) ||
			strings.Contains(tp.body, johnTok) {
			t.Fatalf("GET /app/admin/tokens = %d; want john's token id, not beta's, no token itself\n%s", tp.status, tp.body)
		}
		if p := admin.post(t, "/app/admin/tokens", url.Values{"csrf_token": {ac}, "id": {tokenID(eveTok)}}); p.status != http.StatusNotFound {
			t.Errorf("revoking beta's token = %d, want 404", p.status)
		}
		p = admin.post(t, "/app/admin/tokens", url.Values{"csrf_token": {ac}, "id": {tokenID(johnTok)}})
		if p.status != http.StatusSeeOther || p.location != "/app/admin/tokens?ok=revoked" {
			t.Fatalf("revoke john's token = %d to %q\n%s", p.status, p.location, p.body)
		}
		checkTokens(t, cs, false, johnTok)
		checkTokens(t, cs, true, umarTok, eveTok)

		// Another organization's user id answers exactly like a missing one.
		for _, pair := range [][2]string{{"eve", "nobody"}, {"eve", "BAD%20ID"}} {
			a, c := admin.get(t, "/app/admin/people/"+pair[0]), admin.get(t, "/app/admin/people/"+pair[1])
			if a.status != http.StatusNotFound || c.status != http.StatusNotFound ||
				nonceAttr.ReplaceAllString(a.body, "") != nonceAttr.ReplaceAllString(c.body, "") {
				t.Errorf("%s = %d and %s = %d; want the same 404 page\n%s\n---\n%s", pair[0], a.status, pair[1], c.status, a.body, c.body)
			}
			a = admin.post(t, "/app/admin/people/"+pair[0], url.Values{"csrf_token": {ac}, "action": {"deactivate"}})
			c = admin.post(t, "/app/admin/people/"+pair[1], url.Values{"csrf_token": {ac}, "action": {"deactivate"}})
			if a.status != http.StatusNotFound || nonceAttr.ReplaceAllString(a.body, "") != nonceAttr.ReplaceAllString(c.body, "") {
				t.Errorf("deactivate %s = %d, %s = %d; want the same 404 page", pair[0], a.status, pair[1], c.status)
			}
		}
		checkTokens(t, cs, true, eveTok)

		// The audit log: who, what, whom, from where; no secret. Every entry
		// came through HTTP (a page or /mcp), so each has the client's address.
		ninaLast := sessionOf(t, nina)
		if p := nina.post(t, "/app/signout", url.Values{"csrf_token": {csrf(t, nina.get(t, "/app/people"))}}); p.status != http.StatusSeeOther {
			t.Errorf("nina signs out = %d", p.status)
		}
		audit := admin.get(t, "/app/admin/audit")
		if audit.status != http.StatusOK {
			t.Fatalf("GET /app/admin/audit = %d", audit.status)
		}
		for _, want := range []string{
			`<td data-label="Did">registered</td>`, `<td data-label="Whom">nina</td>`,
			`<td data-label="Did">deactivated</td>`, `<td data-label="Did">reset the password of</td>`,
			`<td data-label="Did">signed in</td>`, `<td data-label="Did">revoked a token of</td>`,
			`<td data-label="Did">gave the admin role to</td>`,
			`<a href="/app/admin/people/umar">umar</a>`, `<td data-label="Who">admin password</td>`,
			`<td data-label="From" class="addr">127.0.0.1</td>`, `<td data-label="Detail">web session</td>`,
		} {
			if !strings.Contains(audit.body, want) {
				t.Errorf("the audit page lacks %s", want)
			}
		}
		for _, secret := range []string{first, second, umarTok, johnTok, eveTok, adminPassword, userPassword,
			ninaLast, adminSession, sessionOf(t, john)} {
			if strings.Contains(audit.body, secret) {
				t.Errorf("the audit page contains a password or a token (%.10s…)", secret)
			}
		}
		if strings.Contains(audit.body, `class="addr">local<`) {
			t.Errorf("an entry made through a page has no client address\n%s", audit.body)
		}

		// The admin password: a wrong current one and a mismatch change
		// nothing; then it changes, and the old one stops working in MCP.
		pw := func(current, next, repeat string) webPage {
			return admin.post(t, "/app/admin/password", url.Values{"csrf_token": {ac}, "current_password": {current},
				"new_password": {next}, "repeat_password": {repeat}})
		}
		if p := pw("not-the-admin-password", "another-long-admin-password", "another-long-admin-password"); p.status != http.StatusForbidden ||
			!strings.Contains(p.body, "admin password is wrong") {
			t.Errorf("change with a wrong current password = %d\n%s", p.status, p.body)
		}
		if p := pw(adminPassword, "another-long-admin-password", "another-long-admin-passwore"); p.status != http.StatusBadRequest {
			t.Errorf("change with a mismatched repeat = %d", p.status)
		}
		if p := pw(adminPassword, "another-long-admin-password", "another-long-admin-password"); p.status != http.StatusSeeOther {
			t.Fatalf("change the admin password = %d\n%s", p.status, p.body)
		}
		callErr(t, cs, "deactivate_user", args{"org_id": "acme", "admin_password": adminPassword, "user_id": "probe"})
		callOK[userOut](t, cs, "deactivate_user", args{"org_id": "acme", "admin_password": "another-long-admin-password", "user_id": "probe"})

		for _, secret := range []string{first, second, adminPassword, "another-long-admin-password", johnTok} {
			if strings.Contains(logs.String(), secret) {
				t.Errorf("the log contains a password or a token (%.10s…)", secret)
			}
		}
	})
}
