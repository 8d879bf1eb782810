package server_test

// The admin console's data pages end to end (issue 15): an admin downloads
// the organization's data (JSON lines, nothing of another organization,
// no password hash, audited); a person without the role, or a form without
// the session's CSRF token, gets no byte of it. Deleting the organization
// needs its id typed: a wrong one deletes nothing; the right one deletes it,
// ends every session and token of it, and leaves another organization as
// it was. A web error's log line carries the request id of its response.

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
	"github.com/ctalk/ctalk/internal/relay"
	"github.com/ctalk/ctalk/internal/testkit"
	"github.com/ctalk/ctalk/mcp"
	"github.com/ctalk/ctalk/server"
)

// exportLine is what the test reads of one line of a download.
type exportLine struct {
	Type     string `json:"type"`
	OrgID    string `json:"org_id"`
	UserID   string `json:"user_id"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

func TestWebAdminData(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		base, logs := webServer(t, dbtest.Open(t, cfg), "")
		cs := connectTo(t, base+"/mcp", "", "")
		umarTok, johnTok := team(t, cs, "acme")
		registerOrg(t, cs, "beta", "Beta")
		registerUser(t, cs, "beta", "eve", "Eve", "")
		registerUser(t, cs, "beta", "bob", "Bob", "")
		eveTok := login(t, cs, "beta", "eve")
		const acmeQ, acmeA, betaQ = "Which queue feeds billing?", "The ledger queue.", "Is the beta launch on Friday?"
		answer(t, cs, johnTok, ask(t, cs, umarTok, "john", acmeQ), acmeA)
		betaID := ask(t, cs, eveTok, "bob", betaQ)

		admin, john, eve := newBrowser(base), newBrowser(base), newBrowser(base)
		admin.signIn(t, "acme", "umar", userPassword)
		john.signIn(t, "acme", "john", userPassword)
		eve.signIn(t, "beta", "eve", userPassword)
		ac := csrf(t, admin.get(t, "/app/admin"))
		if p := admin.post(t, "/app/admin/become", url.Values{"csrf_token": {ac}, "admin_password": {adminPassword}}); p.status != http.StatusSeeOther {
			t.Fatalf("become admin = %d\n%s", p.status, p.body)
		}

		// A person without the role: the become-admin page, never the data.
		jc := csrf(t, john.get(t, "/app"))
		for _, p := range []webPage{
			john.get(t, "/app/admin/data"),
			john.get(t, "/app/admin/delete"),
			john.post(t, "/app/admin/export", url.Values{"csrf_token": {jc}}),
			john.post(t, "/app/admin/delete", url.Values{"csrf_token": {jc}, "confirm_org_id": {"acme"}}),
		} {
			if p.status != http.StatusForbidden || !strings.Contains(p.body, becomeForm) || strings.Contains(p.body, acmeQ) ||
				strings.Contains(p.resp.Header.Get("Content-Type"), "ndjson") || p.resp.Header.Get("Content-Disposition") != "" {
				t.Errorf("%s %s as a non-admin = %d %q; want 403 with the become-admin page and no data",
					p.resp.Request.Method, p.resp.Request.URL.Path, p.status, p.resp.Header.Get("Content-Type"))
			}
		}
		// No CSRF token, or another session's: nothing.
		for name, form := range map[string]url.Values{"no csrf_token": {}, "john's csrf_token": {"csrf_token": {jc}}} {
			if p := admin.post(t, "/app/admin/export", form); p.status != http.StatusForbidden || strings.Contains(p.body, acmeQ) {
				t.Errorf("%s: POST /app/admin/export = %d, want 403 without data", name, p.status)
			}
			form.Set("confirm_org_id", "acme")
			if p := admin.post(t, "/app/admin/delete", form); p.status != http.StatusForbidden {
				t.Errorf("%s: POST /app/admin/delete = %d, want 403", name, p.status)
			}
		}

		// The data page links the download and the delete page.
		dp := admin.get(t, "/app/admin/data")
		if dp.status != http.StatusOK || !strings.Contains(dp.body, `action="/app/admin/export"`) ||
			!strings.Contains(dp.body, `href="/app/admin/delete"`) || !strings.Contains(dp.body, `aria-current="page">Data</a>`) {
			t.Errorf("GET /app/admin/data = %d; want the download form and the delete link\n%s", dp.status, dp.body)
		}

		// The download: a file of acme's lines only.
		p := admin.post(t, "/app/admin/export", url.Values{"csrf_token": {ac}})
		wantName := `attachment; filename="ctalk-acme-` + time.Now().UTC().Format("2006-01-02") + `.jsonl"`
		h := p.resp.Header
		if p.status != http.StatusOK || h.Get("Content-Type") != "application/x-ndjson" || h.Get("Cache-Control") != "no-store" ||
			h.Get("Content-Disposition") != wantName {
			t.Fatalf("POST /app/admin/export = %d, Content-Type %q, Cache-Control %q, Content-Disposition %q; want 200, application/x-ndjson, no-store, %s",
				p.status, h.Get("Content-Type"), h.Get("Cache-Control"), h.Get("Content-Disposition"), wantName)
		}
		var users []string
		var questions []exportLine
		for i, line := range strings.Split(strings.TrimSpace(p.body), "\n") {
			var l exportLine
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Fatalf("line %d of the download is not JSON: %v", i+1, err)
			}
			switch {
			case i == 0 && (l.Type != "organization" || l.OrgID != "acme"):
				t.Errorf("the download's first line = %+v, want organization acme", l)
			case l.Type == "user":
				users = append(users, l.UserID)
			case l.Type == "message":
				questions = append(questions, l)
			}
		}
		if strings.Join(users, " ") != "john umar" && strings.Join(users, " ") != "umar john" {
			t.Errorf("the download's users = %v, want umar and john", users)
		}
		if len(questions) != 1 || questions[0].Question != acmeQ || questions[0].Answer != acmeA {
			t.Errorf("the download's messages = %+v, want acme's one question and its answer", questions)
		}
		for _, other := range []string{betaQ, "eve", "Beta", "argon2", userPassword, adminPassword} {
			if strings.Contains(p.body, other) {
				t.Errorf("the download contains %q (another organization's, or a secret)", other)
			}
		}
		if a := admin.get(t, "/app/admin/audit"); !strings.Contains(a.body, `<td data-label="Did">downloaded the organization&#39;s data</td>`) {
			t.Errorf("the audit log does not record the download\n%s", a.body)
		}

		// Deletion: the page explains, suggests the download, asks for the id.
		del := admin.get(t, "/app/admin/delete")
		if del.status != http.StatusOK || !strings.Contains(del.body, `name="confirm_org_id"`) ||
			!strings.Contains(del.body, `action="/app/admin/export"`) || !strings.Contains(del.body, "cannot be undone") {
			t.Errorf("GET /app/admin/delete = %d; want the explanation, the download and the confirmation field\n%s", del.status, del.body)
		}
		for _, wrong := range []string{"", "beta", "ACME", "acme-x"} {
			p := admin.post(t, "/app/admin/delete", url.Values{"csrf_token": {ac}, "confirm_org_id": {wrong}})
			if p.status != http.StatusBadRequest || !strings.Contains(p.body, `role="alert"`) || !strings.Contains(p.body, "nothing was deleted") {
				t.Errorf("delete confirmed with %q = %d; want 400 saying nothing was deleted\n%s", wrong, p.status, p.body)
			}
		}
		checkTokens(t, cs, true, umarTok, johnTok, eveTok)
		if p := john.get(t, "/app"); p.status != http.StatusOK {
			t.Errorf("after wrong confirmations john's GET /app = %d, want 200", p.status)
		}

		p = admin.post(t, "/app/admin/delete", url.Values{"csrf_token": {ac}, "confirm_org_id": {" acme "}})
		if p.status != http.StatusOK || !strings.Contains(p.body, "<code>acme</code> is deleted") || strings.Contains(p.body, "/app/signout") ||
			!regexp.MustCompile(`People deleted</dt><dd>2<`).MatchString(p.body) {
			t.Fatalf("delete confirmed with the id = %d; want the deleted page, without a session\n%s", p.status, p.body)
		}
		if sc := p.resp.Header.Get("Set-Cookie"); !strings.Contains(sc, "ctalk_session=;") {
			t.Errorf("the deleted page does not clear the session cookie: Set-Cookie %q", sc)
		}
		john.signedOut(t, "after acme was deleted")
		for i, tok := range []string{umarTok, johnTok} {
			if res := call(t, cs, "whoami", args{"auth_token": tok}); !res.IsError {
				t.Errorf("acme's token %d still works after the deletion", i)
			}
		}
		form := john.get(t, "/app/signin")
		if p := john.post(t, "/app/signin", url.Values{"csrf_token": {csrf(t, form)}, "org_id": {"acme"}, "user_id": {"umar"},
			"password": {userPassword}}); p.status == http.StatusSeeOther {
			t.Errorf("umar signed in to the deleted organization")
		}

		// Beta is as it was.
		checkTokens(t, cs, true, eveTok)
		if p := eve.get(t, "/app/asked"); p.status != http.StatusOK || !strings.Contains(p.body, betaQ) {
			t.Errorf("eve's Asked after acme's deletion = %d; want her question\n%s", p.status, p.body)
		}
		bobTok := login(t, cs, "beta", "bob")
		answer(t, cs, bobTok, betaID, "Yes.")

		for _, secret := range []string{umarTok, johnTok, eveTok, userPassword, adminPassword, acmeQ, acmeA} {
			if strings.Contains(logs.String(), secret) {
				t.Errorf("the log contains a secret or message text (%.10s…)", secret)
			}
		}
	})
}

// TestWebErrorLogRequestID: the log line of a page that failed (the
// database went away) carries the request id its response header gave.
func TestWebErrorLogRequestID(t *testing.T) {
	t.Parallel()
	store, err := db.Open(t.Context(), dbtest.NewConfig(t, "sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	rules := relay.New(store, relay.Options{HashConcurrency: 2})
	ts := httptest.NewServer(server.Handler(server.Config{Store: store, Relay: rules, Logger: logger, Version: "e2e",
		MCP: mcp.NewServer(nil, mcp.Options{Version: "e2e", Relay: rules, Logger: logger})}))
	t.Cleanup(ts.Close)
	cs := connectTo(t, ts.URL+"/mcp", "", "")
	team(t, cs, "acme")
	b := newBrowser(ts.URL)
	b.signIn(t, "acme", "umar", userPassword)

	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	p := b.get(t, "/app")
	id := p.resp.Header.Get("X-Request-Id")
	if p.status != http.StatusServiceUnavailable || id == "" {
		t.Fatalf("GET /app with the database closed = %d, X-Request-Id %q; want 503 and an id", p.status, id)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `msg="web session"`) {
			if !strings.Contains(line, "request_id="+id) {
				t.Errorf("the web error's log line lacks request_id=%s:\n%s", id, line)
			}
			return
		}
	}
	t.Errorf("no web error logged for the failed page; the log:\n%s", logs.String())
}
