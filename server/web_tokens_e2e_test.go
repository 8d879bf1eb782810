package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/ctalk/ctalk/db"
	"github.com/ctalk/ctalk/db/dbtest"
)

// tokenID is a token's public id on the tokens page: the first 8 bytes of
// its SHA-256, in hex.
func tokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:8])
}

// TestWebTokens: the tokens page lists a login token made through the MCP
// login tool and this browser's session; revoking the token on the page
// makes its next MCP call fail (issue 13); another person's token id, one
// of another organization and a made-up one get the same answer and stay
// alive; a post without the CSRF token is refused; revoking this session
// signs the browser out.
func TestWebTokens(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		base, logs := webServer(t, dbtest.Open(t, cfg), "")
		cs := connectTo(t, base+"/mcp", "", "")
		umar, john := team(t, cs, "acme")
		registerOrg(t, cs, "beta", "Beta")
		registerUser(t, cs, "beta", "umar", "Umar of beta", "")
		eve := login(t, cs, "beta", "umar")

		b := newBrowser(base)
		b.signIn(t, "acme", "umar", userPassword)
		page := b.get(t, "/app/tokens")
		if page.status != http.StatusOK || !strings.Contains(page.body, tokenID(umar)) || !strings.Contains(page.body, "(this browser)") {
			t.Fatalf("GET /app/tokens = %d; want umar's login token %s and this session listed\n%s", page.status, tokenID(umar), page.body)
		}
		for name, tok := range map[string]string{"john's": john, "beta's": eve} {
			if strings.Contains(page.body, tokenID(tok)) {
				t.Errorf("the page lists %s token", name)
			}
		}
		full := sha256.Sum256([]byte(umar))
		if strings.Contains(page.body, umar) || strings.Contains(page.body, hex.EncodeToString(full[:])) {
			t.Errorf("the page shows the token or its whole hash")
		}
		token := csrf(t, page)

		// Without the CSRF token: refused, the token lives.
		if p := b.post(t, "/app/tokens", url.Values{"id": {tokenID(umar)}}); p.status != http.StatusForbidden {
			t.Errorf("POST without csrf_token = %d, want 403", p.status)
		}
		checkTokens(t, cs, true, umar)

		// Other people's ids answer like a missing one and revoke nothing.
		var missing string
		for i, id := range []string{"0000000000000000", tokenID(john), tokenID(eve), "conn-nothere"} {
			p := b.post(t, "/app/tokens", url.Values{"csrf_token": {token}, "id": {id}})
			alert := between(p.body, `<p role="alert">`, "</p>")
			if p.status != http.StatusNotFound || alert == "" {
				t.Fatalf("revoke %s = %d, alert %q; want 404 with an alert", id, p.status, alert)
			}
			if i == 0 {
				missing = alert
			} else if alert != missing {
				t.Errorf("revoke %s says %q; a missing id says %q", id, alert, missing)
			}
		}
		checkTokens(t, cs, true, umar, john, eve)

		// Revoking umar's login token on the page: its next MCP call fails.
		p := b.post(t, "/app/tokens", url.Values{"csrf_token": {token}, "id": {tokenID(umar)}})
		if p.status != http.StatusSeeOther || p.location != "/app/tokens?ok=revoked" {
			t.Fatalf("revoke umar's token = %d to %q\n%s", p.status, p.location, p.body)
		}
		checkTokens(t, cs, false, umar)
		checkTokens(t, cs, true, john, eve)
		if page := b.get(t, "/app/tokens?ok=revoked"); strings.Contains(page.body, tokenID(umar)) || !strings.Contains(page.body, `role="status"`) {
			t.Errorf("after revoking, the page still lists the token or says nothing:\n%s", page.body)
		}

		// Revoking this browser's own session signs it out.
		u, _ := url.Parse(base)
		var session string
		for _, c := range b.c.Jar.Cookies(u) {
			if c.Name == "ctalk_session" {
				session = c.Value
			}
		}
		p = b.post(t, "/app/tokens", url.Values{"csrf_token": {token}, "id": {tokenID(session)}})
		if p.status != http.StatusSeeOther || p.location != "/app/signin?ok=out" {
			t.Fatalf("revoke this session = %d to %q", p.status, p.location)
		}
		b.signedOut(t, "after revoking this session")
		if strings.Contains(logs.String(), umar) || strings.Contains(logs.String(), session) {
			t.Errorf("a token reached the logs")
		}
	})
}

// between is the text of s between the first start and the next end.
func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	if j := strings.Index(s, end); j >= 0 {
		return s[:j]
	}
	return ""
}

var grantIDField = regexp.MustCompile(`name="id" value="(conn-[^"]+)"`)

// TestWebTokensOAuthConnection: a client connected through OAuth sign-in
// shows on the tokens page with its name; disconnecting it there ends its
// access token at /oauth/mcp and its refresh token, and john cannot
// disconnect it with its id.
func TestWebTokensOAuthConnection(t *testing.T) {
	t.Parallel()
	dbtest.ForEachConfig(t, func(t *testing.T, cfg db.Config) {
		e := newOAuthEnv(t, cfg, dbtest.Open(t, cfg))
		e.team(t, "acme")
		clientID := e.register(t, oauthRedirect)
		tok := e.connect(t, clientID, "http://127.0.0.1:40015/callback")
		if status, _ := e.mcpStatus(t, tok.Access); status != http.StatusOK {
			t.Fatalf("the new access token at /oauth/mcp: %d", status)
		}

		umar := newBrowser(e.base)
		umar.signIn(t, "acme", "umar", userPassword)
		page := umar.get(t, "/app/tokens")
		m := grantIDField.FindStringSubmatch(page.body)
		if m == nil || !strings.Contains(page.body, "Test client") || !strings.Contains(page.body, clientID) {
			t.Fatalf("the tokens page does not list the connected client:\n%s", page.body)
		}
		grant := m[1]

		john := newBrowser(e.base)
		john.signIn(t, "acme", "john", userPassword)
		if p := john.post(t, "/app/tokens", url.Values{"csrf_token": {csrf(t, john.get(t, "/app/tokens"))}, "id": {grant}}); p.status != http.StatusNotFound {
			t.Errorf("john disconnecting umar's client = %d, want 404", p.status)
		}
		if status, _ := e.mcpStatus(t, tok.Access); status != http.StatusOK {
			t.Errorf("john's attempt ended umar's client: %d", status)
		}

		p := umar.post(t, "/app/tokens", url.Values{"csrf_token": {csrf(t, page)}, "id": {grant}})
		if p.status != http.StatusSeeOther || p.location != "/app/tokens?ok=revoked" {
			t.Fatalf("disconnect = %d to %q\n%s", p.status, p.location, p.body)
		}
		if status, _ := e.mcpStatus(t, tok.Access); status != http.StatusUnauthorized {
			t.Errorf("the disconnected client's access token at /oauth/mcp: %d, want 401", status)
		}
		if status, out := e.refresh(t, clientID, tok.Refresh); status != http.StatusBadRequest {
			t.Errorf("the disconnected client's refresh: %d %v, want 400", status, out)
		}
		if page := umar.get(t, "/app/tokens"); strings.Contains(page.body, grant) {
			t.Errorf("the disconnected client is still listed")
		}
	})
}
